#if Postgres
import DurableWorkflow
import WorkflowStorage

extension WorkflowStore {
    /// Opens (or creates) the store in the PostgreSQL schema `configuration` names, applying the
    /// migrations it lacks (rule B1: a newer format is refused with ``DurableError/Kind/newerFormat``).
    /// Every host of a service opens the same configuration.
    public static func open(_ configuration: PostgresConfiguration) throws(DurableError) -> WorkflowStore {
        do {
            return WorkflowStore(backend: try PostgresStorage.open(configuration))
        } catch {
            throw DurableError.opening(configuration.location, failure: error)
        }
    }
}
#endif
