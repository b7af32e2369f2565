/// The page, its style and its script: plain files in `Assets/`, compiled into the library, so
/// the console works offline and from the binary alone.
enum ConsoleAssets {
    static var page: [UInt8] { PackageResources.index_html }
    static var style: [UInt8] { PackageResources.console_css }
    static var script: [UInt8] { PackageResources.console_js }
}
