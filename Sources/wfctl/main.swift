// wfctl: the inspect/replay tool, with the project's example workflows registered.
// A service builds its own in a few lines: see WorkflowTool in the WorkflowCLI library.
import DurableWorkflow
import WorkflowCLI
import WorkflowExamples

var types = WorkflowTypes()
types.register(Counter.self, configuration: DurableConfiguration(actions: Counter.actions))
WorkflowTool.main(types: types)
