import Logging
import Testing
import Workflow
import WorkflowLogging

@Suite("Type erasure, mapping and the logging observer")
struct AnyWorkflowTests {
    struct Shell: Workflow, Sendable {
        struct Rendering: Sendable {
            let text: String
            let increment: @Sendable () -> Void
        }

        struct Forward: WorkflowAction {
            typealias WorkflowType = Shell
            let value: String
            func apply(toState state: inout [String]) -> Never? {
                state.append(value)
                return nil
            }
        }

        func makeInitialState() -> [String] { [] }

        func render(state: [String], context: RenderContext<Shell>) -> Rendering {
            let inner = Counter()
                .mapRendering { rendering in (text: "count=\(rendering.count)", rendering: rendering) }
                .mapOutput { "out:\($0)" }
            let rendered = context.render(inner, key: "erased") { Forward(value: $0) }
            return Rendering(text: rendered.text + " " + state.joined(separator: ","), increment: { rendered.rendering.increment() })
        }
    }

    @Test("a mapped, type-erased child keeps its state and passes mapped renderings and outputs")
    func mappedChild() {
        let host = WorkflowHost(workflow: Shell())
        #expect(host.rendering.text == "count=0 ")
        host.rendering.increment()
        host.rendering.increment()
        #expect(host.rendering.text == "count=2 ")
    }

    @Test("AnyWorkflow reports the wrapped type")
    func underlyingType() {
        #expect(ObjectIdentifier(Counter().asAnyWorkflow().underlyingType) == ObjectIdentifier(Counter.self))
    }

    @Test("the logging observer writes discarded actions as warnings")
    func loggingObserver() {
        let lines = EventLog()
        var logger = Logger(label: "test") { _ in CollectingLogHandler(lines: lines) }
        logger.logLevel = .trace
        let host = WorkflowHost(workflow: Parent(), configuration: .init(observers: [LoggingObserver(logger: logger)]))
        let sink = host.rendering.child!.sink
        host.update(workflow: Parent(showChild: false))
        sink.send(.increment)
        #expect(lines.all.contains { $0.hasPrefix("warning action discarded") && $0.contains("nodeEnded") })
        #expect(lines.all.contains { $0.hasPrefix("debug node ended") })
        #expect(lines.all.contains { $0.hasPrefix("trace render pass") })
    }
}

/// A swift-log handler that keeps each line as "<level> <message> <metadata>".
struct CollectingLogHandler: LogHandler {
    let lines: EventLog
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace
    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }
    func log(event: LogEvent) {
        lines.append("\(event.level) \(event.message) \(event.metadata ?? [:])")
    }
}
