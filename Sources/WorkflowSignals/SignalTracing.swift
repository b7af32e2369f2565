import Tracing
import WorkflowStorage

/// The spans of signals, and the trace context each version carries from its post to its
/// deliveries, across processes and hosts: a post's span injects its context into the version
/// (stored with it by every backend); each delivery's span is started from that context, so a
/// trace shows the post, then each consumer's delivery, however long after and wherever it ran.
struct SignalTracing: Sendable {
    let tracer: any Tracer

    /// The tracing of `configuration`: its tracer, else the bootstrapped one unless it is the
    /// no-op tracer (then `nil`: signals carry no context and make no spans).
    init?(_ configuration: SignalConfiguration) {
        if let tracer = configuration.tracer {
            self.tracer = tracer
        } else if InstrumentationSystem.tracer is NoOpTracer {
            return nil
        } else {
            self.tracer = InstrumentationSystem.tracer
        }
    }

    /// A span for a post of `posts`, and the context every version of the post carries. The span
    /// continues the first post's own context when it has one (it came from outside this
    /// process), else the caller's current context.
    func startPost(_ posts: [SignalPost]) -> (span: any Span, context: TraceContext) {
        let span: any Span
        if let given = posts.first(where: { !$0.traceContext.isEmpty })?.traceContext {
            var context = ServiceContext.topLevel
            tracer.extract(given.fields, into: &context, using: FieldsExtractor())
            span = tracer.startSpan("workflow.signal.post", context: context, ofKind: .producer)
        } else {
            span = tracer.startSpan("workflow.signal.post", ofKind: .producer)
        }
        if posts.count == 1 { span.attributes["workflow.signal"] = posts[0].signal.description }
        span.attributes["workflow.signal.posts"] = posts.count
        var fields: [String: String] = [:]
        tracer.inject(span.context, into: &fields, using: FieldsInjector())
        return (span, TraceContext(fields))
    }

    /// A span for handing `delivery` to its consumer, a child of the post's span when the version
    /// carries its context (a root span otherwise).
    func startDelivery(_ delivery: SignalDelivery) -> any Span {
        var context = ServiceContext.topLevel
        if !delivery.traceContext.isEmpty {
            tracer.extract(delivery.traceContext.fields, into: &context, using: FieldsExtractor())
        }
        let span = tracer.startSpan("workflow.signal.deliver", context: context, ofKind: .consumer)
        span.attributes["workflow.signal"] = delivery.signal.description
        span.attributes["workflow.signal.version"] = Int(delivery.version)
        if let consumer = delivery.consumer { span.attributes["workflow.signal.consumer"] = consumer.description }
        return span
    }

    struct FieldsInjector: Injector {
        func inject(_ value: String, forKey key: String, into carrier: inout [String: String]) {
            carrier[key] = value
        }
    }

    struct FieldsExtractor: Extractor {
        func extract(key: String, from carrier: [String: String]) -> String? {
            carrier[key]
        }
    }
}
