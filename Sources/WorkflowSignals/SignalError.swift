import WorkflowStorage

/// Every failure of the signal subsystem: what, where (store, signal, consumer, version), what to do.
public struct SignalError: Error, Sendable, CustomStringConvertible {
    /// What went wrong.
    public enum Kind: Sendable, Hashable {
        /// No signal record (or version) with this id exists.
        case unknownSignal
        /// No consumer with this id exists.
        case unknownConsumer
        /// A payload does not decode as the type the consumer asked for.
        case undecodablePayload
        /// The underlying store failed (see `storageFailure`); e.g. a read-only store.
        case storage
    }

    public let kind: Kind
    public let store: String
    public let signal: SignalID?
    public let consumer: ConsumerID?
    public let version: UInt64?
    public let detail: String
    public let recovery: String
    /// What the store underneath reported, for a `.storage` failure; its `underlying` error is
    /// the backend's own.
    public let storageFailure: StorageFailure?

    init(_ kind: Kind, store: String, signal: SignalID? = nil, consumer: ConsumerID? = nil, version: UInt64? = nil,
         detail: String, recovery: String = "", storageFailure: StorageFailure? = nil) {
        self.kind = kind
        self.store = store
        self.signal = signal
        self.consumer = consumer
        self.version = version
        self.detail = detail
        self.recovery = recovery
        self.storageFailure = storageFailure
    }

    /// A failure of the store underneath, naming the store.
    init(storage failure: StorageFailure, store: String) {
        self.init(.storage, store: store, detail: failure.summary, recovery: failure.recovery, storageFailure: failure)
    }

    public var description: String {
        var place = ["store \(store)"]
        if let signal { place.append("signal \(signal)") }
        if let consumer { place.append("consumer \(consumer)") }
        if let version { place.append("version \(version)") }
        var text = "\(detail) (\(place.joined(separator: ", ")))"
        if !recovery.isEmpty { text += ". \(recovery)" }
        return text
    }
}

extension SignalError.Kind {
    /// Lets `catch SignalError.Kind.unknownSignal` match an error of that kind.
    public static func ~= (pattern: SignalError.Kind, value: any Error) -> Bool {
        (value as? SignalError)?.kind == pattern
    }
}
