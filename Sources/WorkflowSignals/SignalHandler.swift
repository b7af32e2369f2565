import WorkflowStorage

/// What a consumer's handler does with a version, and the guarantee that comes with it.
public enum SignalHandler: Sendable {
    /// The handler's writes to application tables (``SignalCenter/table(named:)``) and the
    /// delivery mark commit in one transaction of the store, whatever its backend: **exactly
    /// once**. If it throws, nothing is written and the version is retried. The transaction is
    /// valid only while the handler runs, and the handler may run again for the same version if
    /// the store retries the transaction (LMDB does after growing its map). The handler must not
    /// call the center or the store (a post from it would wait for its own transaction).
    case transactional(@Sendable (SignalDelivery, any StorageTransaction) throws -> Void)
    /// The mark is written after the handler returns: **at least once** (a crash between the two
    /// redelivers). If it throws, the version is not marked and is retried.
    case atLeastOnce(@Sendable (SignalDelivery) throws -> Void)
    /// The mark is written before the handler runs: **at most once** (a crash between the two
    /// loses the delivery).
    case atMostOnce(@Sendable (SignalDelivery) -> Void)
    /// A durable workflow's wait: the delivery becomes a logged action whose commit writes the
    /// mark (`mark` is attached to the log entry's transaction).
    case workflow(@Sendable (SignalDelivery, DeliveryMark) -> Void)
}
