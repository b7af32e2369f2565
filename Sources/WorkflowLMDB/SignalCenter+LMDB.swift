import DurableWorkflow
import Foundation
import WorkflowSignals

extension SignalCenter {
    /// Opens (or creates) the LMDB store at `path` and its signal subsystem.
    public static func open(
        path: String, processIdentity: String, runID: String = UUID().uuidString,
        configuration: SignalConfiguration = SignalConfiguration(), storeConfiguration: StoreConfiguration = StoreConfiguration()
    ) throws -> SignalCenter {
        try open(store: WorkflowStore.open(path: path, configuration: storeConfiguration),
                 processIdentity: processIdentity, runID: runID, configuration: configuration)
    }
}
