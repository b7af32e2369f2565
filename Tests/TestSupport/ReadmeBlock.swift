import Foundation

/// Checks that README.md shows exactly the example a test file compiles.
public enum ReadmeBlock {
    /// The text between `start` and the next `end` in `text`, trimmed.
    static func block(_ text: String, from start: String, to end: String) -> String? {
        guard let s = text.range(of: start), let e = text.range(of: end, range: s.upperBound..<text.endIndex) else { return nil }
        return String(text[s.upperBound..<e.lowerBound]).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The example `name` as the test file at `testFile` has it (between `// BEGIN README name`
    /// and `// END README name`) and as README.md shows it (after `<!-- example: name -->`).
    public static func pair(named name: String, testFile: String) throws -> (source: String?, readme: String?) {
        let file = URL(fileURLWithPath: testFile)
        let root = file.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let readme = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
        let source = try String(contentsOf: file, encoding: .utf8)
        return (block(source, from: "// BEGIN README \(name)", to: "// END README \(name)"),
                block(readme, from: "<!-- example: \(name) -->\n```swift", to: "```"))
    }
}
