import DurableWorkflow
import LMDB
import WorkflowStorage

/// How a `WorkflowStore` on LMDB is opened.
public struct StoreConfiguration: Sendable {
    /// The LMDB environment underneath (map size limits, readers, read-only, the writer's wait).
    public var environment: EnvironmentConfiguration
    /// Whether `open` first reads every page of the store in a child process
    /// (`WorkflowStore.walkPages(_:)`), so that damage that would stop this process inside
    /// liblmdb is a typed `.corrupted` failure of the open instead. `WorkflowService` walks at
    /// start anyway (after the open, which reads the meta pages and the `meta` database).
    public var walkPagesFirst: PageWalkPolicy

    /// Defaults: a map starting at 64 MiB and growing to 1 TiB, 126 readers, no walk at open.
    public init(environment: EnvironmentConfiguration = EnvironmentConfiguration(), walkPagesFirst: PageWalkPolicy = .never) {
        self.environment = environment
        self.walkPagesFirst = walkPagesFirst
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
        if configuration.walkPagesFirst != .never {
            let due = PageWalkRecord.read(in: path).isDue(in: path)
            if case .damaged(let failure) = PageWalkRecord.walk(path, policy: configuration.walkPagesFirst, due: due) {
                throw DurableError.opening(path, failure: failure)
            }
        }
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
