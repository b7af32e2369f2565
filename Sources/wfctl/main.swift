// wfctl: the inspect/replay tool, with the project's example workflows registered.
// A service builds its own in a few lines: see WorkflowTool in the WorkflowCLI library (without
// `serve`), or WorkflowConsoleTool in WorkflowConsole (with it).
import DurableWorkflow
import WorkflowCLI
import WorkflowConsole
import WorkflowExamples
import WorkflowSignals

var types = WorkflowTypes()
types.register(Counter.self, configuration: DurableConfiguration(actions: Counter.actions))
types.register(UploadJob.self) { store in
    UploadJob.configuration(center: try SignalCenter.open(store: store, processIdentity: "wfctl"))
}
types.register(Order.self) { store in
    var configuration = DurableConfiguration(actions: Order.actions)
    configuration.host.provide(try SignalCenter.open(store: store, processIdentity: "wfctl"))
    return configuration
}
WorkflowConsoleTool.main(types: types)
