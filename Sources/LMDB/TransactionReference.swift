/// A write transaction reached through a class reference, for code that must hand it on where a
/// borrowed `~Copyable` value cannot go (behind a protocol, in an existential). It is valid only
/// inside ``Transaction/withReference(_:)``: afterwards every use throws
/// ``LMDBError/Kind/badValue`` instead of touching a finished transaction. Not `Sendable`: it
/// stays on the thread that runs the transaction.
public final class TransactionReference {
    private var parts: (txn: OpaquePointer, environment: Environment, state: UnsafeMutablePointer<TransactionState>)?

    fileprivate init(txn: OpaquePointer, environment: Environment, state: UnsafeMutablePointer<TransactionState>) {
        parts = (txn, environment, state)
    }

    fileprivate func end() { parts = nil }

    /// Runs `body` with the transaction, or throws when it has ended.
    public func withTransaction<R>(_ body: (borrowing WriteTransaction) throws(LMDBError) -> R) throws(LMDBError) -> R {
        guard let parts else {
            throw LMDBError(kind: .badValue, path: "", operation: "use a transaction reference",
                            detail: "the transaction ended when the closure it was handed to returned",
                            recovery: "Use the reference only inside that closure")
        }
        return try body(WriteTransaction(txn: parts.txn, environment: parts.environment, state: parts.state))
    }
}

extension Transaction where Mode == ReadWrite {
    /// Runs `body` with a reference to this transaction that stops working when `body` returns.
    public func withReference<R>(_ body: (TransactionReference) throws -> R) rethrows -> R {
        let reference = TransactionReference(txn: txn, environment: environment, state: state)
        defer { reference.end() }
        return try body(reference)
    }
}
