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

    /// Copies the store in this directory (its LMDB files) into `destination`, which must not
    /// exist: the wake sockets a process left in `wake/` are not files to copy.
    public func copyStore(to destination: String) throws {
        try FileManager.default.createDirectory(atPath: destination, withIntermediateDirectories: true)
        for name in ["data.mdb", "lock.mdb"] where FileManager.default.fileExists(atPath: child(name)) {
            try FileManager.default.copyItem(atPath: child(name), toPath: "\(destination)/\(name)")
        }
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }
}
