import Tracing

/// The tracer a durable host's configuration names, provided to render (tasks reach it as a
/// dependency, so that their attempts' spans go where the host's do).
struct EngineTracer: Sendable {
    let tracer: any Tracer
}
