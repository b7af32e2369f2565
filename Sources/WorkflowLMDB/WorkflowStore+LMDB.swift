import DurableWorkflow
import LMDB
import WorkflowStorage

/// How a `WorkflowStore` on LMDB is opened.
public struct StoreConfiguration: Sendable {
    /// The LMDB environment underneath (map size limits, readers, read-only).
    public var environment: EnvironmentConfiguration

    /// Defaults: a map starting at 64 MiB and growing to 1 TiB, 126 readers.
    public init(environment: EnvironmentConfiguration = EnvironmentConfiguration()) {
        self.environment = environment
    }

    /// A read-only store (for inspection tools): every write fails.
    public static var readOnly: StoreConfiguration {
        StoreConfiguration(environment: EnvironmentConfiguration(readOnly: true))
    }
}

extension WorkflowStore {
    /// Opens (or creates) the LMDB store in the directory `path`, checking its format version
    /// (rule B1: a newer one is refused, an older one migrated).
    ///
    /// A path this process already has open is shared with the same configuration, and is a
    /// storage error with another one until every reference to the open store is gone (a
    /// stopped host's commit and drain threads drop theirs moments after it stops).
    public static func open(path: String, configuration: StoreConfiguration = StoreConfiguration()) throws(DurableError) -> WorkflowStore {
        do {
            return WorkflowStore(backend: try LMDBStorage.open(path: path, configuration: configuration.environment))
        } catch {
            throw DurableError.opening(path, failure: error)
        }
    }

    /// As ``open(path:configuration:)``, with the journal checkpointed at `checkpointEntries`
    /// entries (tests make checkpoints frequent).
    package static func open(path: String, checkpointEntries: Int) throws(DurableError) -> WorkflowStore {
        do {
            return WorkflowStore(backend: try LMDBStorage.open(
                path: path, configuration: StoreConfiguration().environment, checkpointEntries: checkpointEntries))
        } catch {
            throw DurableError.opening(path, failure: error)
        }
    }

    /// The LMDB backend underneath, when the store is on LMDB.
    package var lmdb: LMDBStorage? { backend as? LMDBStorage }

    /// The LMDB environment underneath (for tests that look inside).
    package var environment: Environment {
        guard let lmdb else { preconditionFailure("the store at \(path) is not an LMDB store") }
        return lmdb.environment
    }
}
