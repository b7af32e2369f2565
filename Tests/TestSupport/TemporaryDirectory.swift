import Foundation

/// A fresh directory under the system temp folder, removed when the value is released.
public final class TemporaryDirectory: Sendable {
    /// The directory's absolute path.
    public let path: String

    /// Creates `/tmp/wf-<label>-XXXXXX`.
    public init(_ label: String = "test") {
        var template = Array("\(NSTemporaryDirectory())/wf-\(label)-XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        precondition(made != nil, "mkdtemp failed: \(errno)")
        path = String(cString: made!)
    }

    /// A path inside the directory (not created).
    public func child(_ name: String) -> String { "\(path)/\(name)" }

    deinit { try? FileManager.default.removeItem(atPath: path) }
}
