import Testing
import WorkflowStorage

@Suite("A signal version's trace context in its stored form")
struct TraceContextTests {
    @Test("fields round-trip in name order; no fields are no bytes")
    func roundTrip() throws {
        #expect(TraceContext().encoded.isEmpty)
        #expect(TraceContext(encoded: [UInt8]()) == TraceContext())
        let context = TraceContext(["traceparent": "00-abc-def-01", "tracestate": "vendor=ünïcode", "": "empty name"])
        let bytes = context.encoded
        #expect(TraceContext(encoded: bytes) == context)
        #expect(TraceContext(["b": "2", "a": "1"]).encoded == TraceContext(["a": "1", "b": "2"]).encoded)
        #expect(Array(TraceContext(["a": "xy"]).encoded) == [1, 0, UInt8(ascii: "a"), 2, 0, UInt8(ascii: "x"), UInt8(ascii: "y")])
    }

    @Test("cut, overlong or non-UTF-8 bytes are not a context")
    func damaged() {
        let bytes = TraceContext(["traceparent": "00-abc-def-01"]).encoded
        for count in 1..<bytes.count { #expect(TraceContext(encoded: Array(bytes.prefix(count))) == nil, "cut to \(count) bytes") }
        #expect(TraceContext(encoded: [1, 0, 0xFF, 0, 0] as [UInt8]) == nil)
        #expect(TraceContext(encoded: [9, 0, UInt8(ascii: "a")] as [UInt8]) == nil)
    }

    @Test("a field longer than 65,535 bytes is left out")
    func overlong() {
        let context = TraceContext(["traceparent": "00-abc-def-01", "huge": String(repeating: "x", count: 70_000)])
        #expect(TraceContext(encoded: context.encoded) == TraceContext(["traceparent": "00-abc-def-01"]))
    }
}
