import DurableWorkflow
import Dispatch
import Foundation
import Hummingbird
import Logging
import ServiceLifecycle
import WorkflowCLI

/// The operator console: an HTTP server (Hummingbird) that serves a page at `/` and a JSON API
/// under `/api/` over one store, read-only unless started with control allowed. `wfctl serve`
/// runs it; a service's own tool can too, with its workflow types registered (for time travel
/// and waits):
///
///     let console = try WorkflowConsole(store: store, types: types)
///     try await console.run()
///
/// Safe against a running service, as `wfctl`'s read commands are: it reads in read
/// transactions (LMDB) or plain queries (PostgreSQL), and holds no instance.
public struct WorkflowConsole: Sendable {
    let api: ConsoleAPI
    let changes: ConsoleChanges
    let rates: ConsoleRates
    let latency: ConsoleLatency?

    /// A console over `store` (open it read-only unless the configuration allows control, as
    /// `wfctl serve` does); refuses a configuration that would expose the store
    /// (``ConsoleConfiguration/validate()``). A console that runs inside the service shows the
    /// engine's latency percentiles when given the ``ConsoleLatency`` its store records into.
    public init(
        store: WorkflowStore, types: WorkflowTypes = WorkflowTypes(), configuration: ConsoleConfiguration = ConsoleConfiguration(),
        latency: ConsoleLatency? = nil
    ) throws(ConsoleError) {
        try configuration.validate()
        api = ConsoleAPI(store: store, types: types, configuration: configuration)
        changes = ConsoleChanges(store: store)
        rates = ConsoleRates(store: store)
        self.latency = latency
    }

    public var configuration: ConsoleConfiguration { api.configuration }

    /// Serves until the task is cancelled (or, with `gracefulShutdown`, until SIGTERM or
    /// SIGINT); `onListening` gets the address and port once it listens (the port it took when
    /// ``ConsoleConfiguration/port`` is 0).
    public func run(
        gracefulShutdown: Bool = false, onListening: @escaping @Sendable (_ host: String, _ port: Int) async -> Void = { _, _ in }
    ) async throws {
        let configuration = self.configuration
        let application = Application(
            router: router(),
            configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: "wfctl-serve"),
            onServerRunning: { channel in await onListening(configuration.host, channel.localAddress?.port ?? configuration.port) },
            logger: Logger(label: "wfctl.serve", factory: { _ in SwiftLogNoOpLogHandler() })
        )
        rates.start()
        defer { rates.stop() }
        if gracefulShutdown {
            try await application.runService()
        } else {
            try await application.run()
        }
    }

    /// The routes: the page and its assets, the API, each behind the token when one is set.
    func router() -> Router<BasicRequestContext> {
        let router = Router()
        router.add(middleware: ConsoleHeaders())
        if let token = configuration.token { router.add(middleware: TokenCheck(token: token)) }
        let api = self.api
        router.get("/") { request, _ in
            var response = Self.asset(ConsoleAssets.page, type: "text/html; charset=utf-8")
            // The page asked for with ?token= leaves a cookie, so that its script and style load.
            if let token = api.configuration.token, request.uri.queryParameters["token"].map(String.init) == token {
                response.setCookie(Cookie(name: TokenCheck.cookie, value: token, path: "/", secure: false, httpOnly: true, sameSite: .strict))
            }
            return response
        }
        router.get("/console.css") { _, _ in Self.asset(ConsoleAssets.style, type: "text/css; charset=utf-8") }
        router.get("/console.js") { _, _ in Self.asset(ConsoleAssets.script, type: "text/javascript; charset=utf-8") }
        router.get("/api/store") { request, _ in await Self.answer { api.store(Self.query(request)) } }
        let rates = self.rates
        router.get("/api/rates") { _, _ in Self.response(ConsoleAPI.rates(rates.recent)) }
        let latency = self.latency
        router.get("/api/latency") { request, _ in Self.response(ConsoleAPI.latency(latency, Self.query(request))) }
        router.get("/api/summary") { request, _ in await Self.answer { api.summary(Self.query(request)) } }
        router.get("/api/instances") { request, _ in await Self.answer { api.instances(Self.query(request)) } }
        router.get("/api/instances/:id") { _, context in
            let id = try Self.parameter("id", context)
            return await Self.answer { api.instance(id) }
        }
        router.get("/api/instances/:id/log") { request, context in
            let id = try Self.parameter("id", context)
            return await Self.answer { api.log(id, Self.query(request)) }
        }
        router.get("/api/instances/:id/state") { request, context in
            let id = try Self.parameter("id", context)
            return await Self.answer { api.state(id, Self.query(request)) }
        }
        // Server-sent events: `change` (with the store's position) whenever it moves. A stream
        // ends at graceful shutdown: the server waits for every response to end, and a page
        // would otherwise hold it up for as long as it stays open.
        let changes = self.changes
        router.get("/api/events") { _, _ in
            let events = changes.subscribe().cancelOnGracefulShutdown().map { event -> ByteBuffer in
                switch event {
                case .changed(let position): ByteBuffer(string: "event: change\ndata: {\"position\":\(position)}\n\n")
                case .idle: ByteBuffer(string: ": idle\n\n")
                }
            }
            return Response(
                status: .ok, headers: [.contentType: "text/event-stream", .cacheControl: "no-store"],
                body: .init(asyncSequence: events))
        }
        router.get("/api/signals") { request, _ in await Self.answer { api.signals(Self.query(request)) } }
        router.get("/api/signals/:id") { request, context in
            let id = try Self.parameter("id", context)
            return await Self.answer { api.signal(id, Self.query(request)) }
        }
        if configuration.allowControl, let token = configuration.token {
            // Changes need the token in the header: a cookie alone (sent by the browser on its
            // own) never changes anything.
            let check = TokenCheck(token: token)
            router.post("/api/instances/:id/control") { request, context in
                if let refused = Self.withoutHeaderToken(request, check) { return refused }
                let id = try Self.parameter("id", context)
                let body = try await request.body.collect(upTo: 64 * 1024)
                return await Self.answer { api.control(id, body: Array(buffer: body)) }
            }
            router.post("/api/signals/post") { request, _ in
                if let refused = Self.withoutHeaderToken(request, check) { return refused }
                let body = try await request.body.collect(upTo: 1 << 20)
                return await Self.answer { api.postSignal(body: Array(buffer: body)) }
            }
        }
        return router
    }

    /// A 403 for a change whose request lacks the token in its `Authorization` header.
    static func withoutHeaderToken(_ request: Request, _ check: TokenCheck) -> Response? {
        if let header = request.headers[.authorization], header.hasPrefix("Bearer "), check.matches(String(header.dropFirst(7))) { return nil }
        return refusal(403, "a control request carries the token as Authorization: Bearer TOKEN")
    }

    static func refusal(_ status: Int, _ message: String) -> Response {
        response(ConsoleAPI.Answer.failure(status, message))
    }

    static func response(_ answer: ConsoleAPI.Answer) -> Response {
        Response(
            status: .init(code: answer.status), headers: [.contentType: "application/json; charset=utf-8"],
            body: .init(byteBuffer: ByteBuffer(bytes: answer.body)))
    }

    /// A route parameter, percent-decoded (an instance id may hold `/` as `%2F`).
    static func parameter(_ name: String, _ context: BasicRequestContext) throws -> String {
        let raw = try context.parameters.require(name)
        return raw.removingPercentEncoding ?? raw
    }

    static func query(_ request: Request) -> ConsoleAPI.Query {
        var query: ConsoleAPI.Query = [:]
        for (key, value) in request.uri.queryParameters { query[String(key)] = String(value) }
        return query
    }

    /// Runs an endpoint's reads on a Dispatch worker (a PostgreSQL read blocks its thread for
    /// the round trip): the cooperative pool stays free to serve other requests.
    static func answer(_ endpoint: @escaping @Sendable () -> ConsoleAPI.Answer) async -> Response {
        response(await withCheckedContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(returning: endpoint()) }
        })
    }

    static func asset(_ bytes: [UInt8], type: String) -> Response {
        Response(status: .ok, headers: [.contentType: type], body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
    }
}
