import Foundation

/// Checks that README.md shows exactly the example a test file compiles.
public enum ReadmeBlock {
    /// The text between `start` and the next `end` in `text`, trimmed.
    static func block(_ text: String, from start: String, to end: String) -> String? {
        guard let s = text.range(of: start), let e = text.range(of: end, range: s.upperBound..<text.endIndex) else { return nil }
        return String(text[s.upperBound..<e.lowerBound]).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The example `name` as the test file at `testFile` has it (between `// BEGIN README name`
    /// and `// END README name`) and as the user's guide shows it (after `<!-- example: name -->`,
    /// in README.md or one of the guide's pages in docs/).
    public static func pair(named name: String, testFile: String) throws -> (source: String?, readme: String?) {
        let file = URL(fileURLWithPath: testFile)
        let root = file.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let docs = root.appendingPathComponent("docs")
        let pages = [root.appendingPathComponent("README.md")]
            + ((try? FileManager.default.contentsOfDirectory(atPath: docs.path)) ?? []).filter { $0.hasSuffix(".md") }.sorted()
                .map { docs.appendingPathComponent($0) }
        let source = try String(contentsOf: file, encoding: .utf8)
        let shown = try pages.lazy.compactMap { page in
            block(try String(contentsOf: page, encoding: .utf8), from: "<!-- example: \(name) -->\n```swift", to: "```")
        }.first
        return (block(source, from: "// BEGIN README \(name)", to: "// END README \(name)"), shown)
    }
}
