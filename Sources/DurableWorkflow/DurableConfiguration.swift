import Logging
import Tracing
import Workflow
import WorkflowStorage

/// How a durable host commits, snapshots and checks its log: one value, passed at start/resume.
public struct DurableConfiguration: Sendable {
    /// When an applied action counts as committed (rule D2).
    public enum Mode: Sendable, Hashable {
        /// Every entry is committed and synced to disk (two flushes) before its consequences
        /// leave the engine: survives power loss.
        case strict
        /// Entries share commits (synced like `strict`): a commit happens when `maxBatch` entries
        /// are pending, when someone waits (`sendAndWait`, `flush()`, stop), or `maxDelay` after
        /// the first uncommitted entry. `send` returns after apply and render; renderings, outputs
        /// and worker starts are released after the commit. While many instances commit, the
        /// store's committer may hold a round up to 500 µs to gather them (see <doc:Performance>).
        case grouped(maxBatch: Int, maxDelay: Duration)
        /// Every entry is committed without an fsync (survives a crash of the process, not of the
        /// machine); the store syncs in the background every `syncInterval`.
        case processCrashSafe(syncInterval: Duration)

        /// `grouped` with batches of up to 1,000 entries, committed within 2 ms.
        public static var grouped: Mode { .grouped(maxBatch: 1000, maxDelay: .milliseconds(2)) }
        /// `processCrashSafe` syncing every second.
        public static var processCrashSafe: Mode { .processCrashSafe(syncInterval: .seconds(1)) }
    }

    /// Whether root outputs are delivered again after a restart until their consumer says it
    /// handled them.
    public enum OutputDelivery: Sendable, Hashable {
        /// Each output is delivered once, live, on `WorkflowHost.outputs`; those a crash kept
        /// from being handled are not delivered again (a finishing workflow's final output still
        /// is: `WorkflowHost.completion`).
        case atMostOnce
        /// Outputs go to `WorkflowHost.acknowledgeableOutputs` with their entry's sequence; the
        /// consumer acknowledges with `WorkflowHost.acknowledgeOutputs(through:)` (an entry in
        /// the log), and a resumed host delivers every output not acknowledged again, first. A
        /// resume then starts from a snapshot taken when every output before it was acknowledged
        /// (or from the first entry).
        case untilAcknowledged
    }

    /// When entries carry a digest of the state after them (rule D4).
    public enum Digests: Sendable, Hashable {
        /// Never.
        case off
        /// Every `n`th entry (1: every entry).
        case every(Int)
    }

    /// Commit policy (default `strict`).
    public var mode: Mode
    /// The action types this host's log can hold.
    public var actions: ActionRegistry
    /// How payloads and states become bytes. By default a new instance uses
    /// `BinaryPayloadCodec` and an existing one the codec it was started with; a codec set
    /// here must be the one the instance was started with (else ``DurableError/Kind/codecMismatch``).
    public var codec: any PayloadCodec {
        didSet { codecIsChosen = true }
    }
    /// Whether `codec` was chosen by the user (else an instance's own codec is used).
    private(set) var codecIsChosen: Bool
    /// Take a snapshot after every `n` entries (`nil`: never automatically).
    public var snapshotEvery: Int?
    /// Digests of the state recorded with entries (default: every entry).
    public var digests: Digests
    /// Whether replay (resume, `verify`, time travel) compares the state with the digests
    /// recorded in the log (default `true`, rule D4). Turn it off to resume or verify an instance
    /// whose recorded digests no longer match although its workflow is deterministic: one written
    /// before this library encoded sets and dictionaries canonically (their order then was the
    /// writing process's hash order). New entries are still given digests, per ``digests``.
    public var checksRecordedDigests = true
    /// Observers, programmer-error policy and clock for the runtime.
    public var host: HostConfiguration
    /// Observers of the log: appends, commits, replay progress.
    public var observers: [any DurableObserver] = []
    /// Whether root outputs are delivered again after a restart until acknowledged (default: at most once).
    public var outputDelivery = OutputDelivery.atMostOnce
    /// Where the engine's spans go (swift-distributed-tracing): `workflow.action` from an
    /// action's apply to its commit, `workflow.replay` for a resume, `workflow.task.attempt` for
    /// each attempt of a task. By default the tracer bootstrapped in `InstrumentationSystem`; with
    /// none bootstrapped, no span is made at all.
    public var tracer: (any Tracer)?
    /// The code version of this build (`"2026.12.1"`, a commit, a release): new instances start
    /// under it and keep it for life (rule V1). `ApplyContext.codeVersion` and
    /// `RenderContext.codeVersion` read it, `wfctl list` shows and filters by it. `nil` (the
    /// default): instances carry none.
    public var codeVersion: String?
    /// The version markers this build's code supports, with the versions of each it can run
    /// (`HostConfiguration.versionMarkers`, which it sets): `["fee": 1...2]`. A new instance
    /// takes the newest of each (logged with its first entry); a resume refuses, with
    /// ``DurableError/Kind/unsupportedVersion``, an instance whose log fixed a version outside
    /// the range.
    public var versionMarkers: [String: ClosedRange<Int>] {
        get { host.versionMarkers }
        set { host.versionMarkers = newValue }
    }
    /// The version each action tag is written in, where it is not the action type's current
    /// `DurableAction.version` (rule V1): the first step of rolling out an encoding change. A
    /// build that reads version 2 of `order.addItem` but still writes version 1 (its encoder
    /// registered with `ActionRegistry.register(_:version:decode:encode:)`) can be rolled back to
    /// the build before it, which reads only version 1; once no build that needs version 1 runs,
    /// the next build drops the entry and writes version 2.
    public var writtenActionVersions: [String: Int] = [:]
    /// The code versions this build runs (rule V4; default: every one): `resume` and
    /// `resumeAll` refuse an instance started under another with
    /// ``DurableError/Kind/unsupportedCodeVersion`` (it stays as it is, for a build that runs it),
    /// and a PostgreSQL host takes over only the instances it runs. Keep the versions of the
    /// instances still running in it until they drain (`wfctl list --versions`).
    public var supportedCodeVersions = SupportedCodeVersions.all
    /// Where the engine logs what concerns the instance's life: starts and resumes (debug),
    /// replays (debug, with entries and duration), takeovers of a dead process's claim (info),
    /// an instance that stops on a failure or is marked failed (error), a finished instance
    /// (debug). The default logs nothing.
    public var logger = Logger(label: "workflow", factory: { _ in SwiftLogNoOpLogHandler() })
    /// How new instances name their nodes (``InstanceNaming``): `.legacy` only for tests that
    /// write instances as the builds before issue 59 did.
    package var pathNaming = NodePath.Naming.readable

    /// A configuration; every parameter has a documented default.
    public init(
        mode: Mode = .strict, actions: ActionRegistry = ActionRegistry(), codec: (any PayloadCodec)? = nil,
        snapshotEvery: Int? = 1000, digests: Digests = .every(1), host: HostConfiguration = HostConfiguration()
    ) {
        self.mode = mode
        self.actions = actions
        self.codec = codec ?? BinaryPayloadCodec()
        self.codecIsChosen = codec != nil
        self.snapshotEvery = snapshotEvery
        self.digests = digests
        self.host = host
    }
}

extension DurableConfiguration {
    /// The markers a new instance fixes with its props entry: the newest of every declared marker,
    /// and its naming (``InstanceNaming``).
    var newInstanceMarkers: [String: Int] {
        var markers = InstanceVersions.newest(of: versionMarkers)
        if pathNaming == .readable { markers[InstanceNaming.marker] = InstanceNaming.current }
        return markers
    }

    /// The versions a new instance's tree takes: ``newInstanceMarkers`` and this build's code
    /// version (`nil` when there are neither).
    func newInstanceVersions() -> InstanceVersions? {
        let markers = newInstanceMarkers
        guard !markers.isEmpty || codeVersion != nil else { return nil }
        return InstanceVersions(codeVersion: codeVersion, declared: versionMarkers, markers: markers, programmerErrors: host.programmerErrors)
    }

    /// The runtime's configuration for a host of this one.
    var hostConfiguration: HostConfiguration {
        var host = self.host
        host.acknowledgedOutputs = outputDelivery == .untilAcknowledged
        if let tracer = activeTracer { host.provide(EngineTracer(tracer: tracer)) }
        return host
    }

    /// The tracer spans go to: the configured one, else the bootstrapped one unless it is the no-op tracer.
    var activeTracer: (any Tracer)? {
        if let tracer { return tracer }
        let global = InstrumentationSystem.tracer
        return global is NoOpTracer ? nil : global
    }

    /// This configuration with the codec `record`'s instance was written with.
    func resolvingCodec(for record: StoredInstance, store: String, instance: String) throws -> DurableConfiguration {
        if codec.name == record.codec { return self }
        if !codecIsChosen, let builtIn = BuiltInCodecs.codec(named: record.codec) {
            var copy = self
            copy.codec = builtIn
            copy.codecIsChosen = false
            return copy
        }
        throw DurableError(.codecMismatch, store: store, instance: instance,
                           detail: "the instance was written with the codec \"\(record.codec)\", the configuration has \"\(codec.name)\"",
                           recovery: "Set DurableConfiguration.codec to the codec named \"\(record.codec)\" (or leave it unset for the built-in ones)")
    }
}
