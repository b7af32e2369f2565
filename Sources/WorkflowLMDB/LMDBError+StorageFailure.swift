import LMDB
import WorkflowStorage

extension LMDBError {
    /// This error in the engine's terms, with this error as the underlying one.
    package var storageFailure: StorageFailure {
        let kind: StorageFailure.Kind = switch self.kind {
        case .missingDirectory, .databaseNotFound: .notFound
        case .notAnLMDBEnvironment: .notAStore
        case .readOnly: .readOnly
        case .mapFull, .diskFull: .full
        case .corrupted, .decodingFailed: .corrupted
        case .versionMismatch, .incompatible: .incompatible
        case .alreadyOpen, .readersFull, .databasesFull: .busy
        case .keyTooLong, .badValue: .invalidInput
        case .closed: .closed
        case .writerBusy: .storeBusy
        case .other: .other
        }
        return StorageFailure(kind: kind, backend: "LMDB", location: path, operation: operation,
                              detail: code.map { "\(detail) (code \($0))" } ?? detail, recovery: recovery, underlying: self)
    }
}

/// Runs `body`, turning LMDB errors into storage failures; a storage failure passes as it is.
func callLMDB<R>(at location: String, _ body: () throws -> R) throws(StorageFailure) -> R {
    do {
        return try body()
    } catch let failure as StorageFailure {
        throw failure
    } catch let error as LMDBError {
        throw error.storageFailure
    } catch {
        throw StorageFailure(kind: .other, backend: "LMDB", location: location, operation: "call", detail: "\(error)", recovery: "")
    }
}
