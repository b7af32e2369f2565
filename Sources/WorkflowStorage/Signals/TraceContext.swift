/// A trace context carried by a signal version from its post to its deliveries: the fields a
/// tracer injected (for W3C Trace Context, `traceparent` and `tracestate`), kept as text so that
/// any backend stores it and any process's tracer extracts it.
public struct TraceContext: Sendable, Hashable {
    /// The injected fields, by name.
    public var fields: [String: String]

    public init(_ fields: [String: String] = [:]) {
        self.fields = fields
    }

    public var isEmpty: Bool { fields.isEmpty }

    /// The stored form: for each field in name order, the name's and the value's UTF-8 bytes,
    /// each after its length as a little-endian `UInt16` (a field whose name or value is longer
    /// than 65,535 bytes is left out: no tracer's context is).
    public var encoded: [UInt8] {
        var bytes: [UInt8] = []
        for name in fields.keys.sorted() {
            let value = fields[name]!
            guard name.utf8.count <= Int(UInt16.max), value.utf8.count <= Int(UInt16.max) else { continue }
            for text in [name, value] {
                let utf8 = Array(text.utf8)
                bytes.append(UInt8(truncatingIfNeeded: utf8.count))
                bytes.append(UInt8(truncatingIfNeeded: utf8.count >> 8))
                bytes += utf8
            }
        }
        return bytes
    }

    /// The context `encoded` wrote, or `nil` when `bytes` are not such a form.
    public init?<Bytes: Collection<UInt8>>(encoded bytes: Bytes) where Bytes.Index == Int {
        var fields: [String: String] = [:]
        var index = bytes.startIndex
        func text() -> String? {
            guard bytes.endIndex - index >= 2 else { return nil }
            let count = Int(bytes[index]) | Int(bytes[index + 1]) << 8
            index += 2
            guard bytes.endIndex - index >= count else { return nil }
            defer { index += count }
            return String(validating: bytes[index..<index + count], as: UTF8.self)
        }
        while index < bytes.endIndex {
            guard let name = text(), let value = text() else { return nil }
            fields[name] = value
        }
        self.fields = fields
    }
}
