/// A root output with the sequence of the log entry whose action emitted it (0 in memory).
public struct RootOutput<Value: Sendable>: Sendable {
    /// The entry's sequence: acknowledge up to it with ``WorkflowHost/acknowledgeOutputs(through:)``.
    public let sequence: UInt64
    /// The output.
    public let value: Value
}
