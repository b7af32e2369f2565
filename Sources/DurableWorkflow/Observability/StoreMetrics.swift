import CoreMetrics

/// The engine's swift-metrics, one set per store, made once (so a commit or a replay only
/// records into them). With no metrics backend bootstrapped, swift-metrics hands out no-op
/// handlers and recording costs a call that returns.
///
/// Every metric has the dimension `store` (the store's path or URL):
/// - `workflow_commits` (counter): pipeline rounds written, and each start's own commit (its props
///   entry, with its first action if it has one); `workflow_commit_failures`: rounds the store failed.
/// - `workflow_entries_committed` (counter), `workflow_actions_applied` (counter: entries that log
///   an action, counted as they commit).
/// - `workflow_commit_entries`, `workflow_commit_instances` (recorders): a round's size.
/// - `workflow_commit_duration` (timer): a round's write, from request to outcome.
/// - `workflow_replay_duration` (timer) and `workflow_replayed_entries` (counter): resumes.
/// - `workflow_instances_failed` (counter): instances `resumeAll` marked failed.
/// - `workflow_instances` (gauge, with dimension `status`): set by ``WorkflowStore/recordInstanceCounts()``.
/// - `workflow_task_attempts_drained`, `workflow_task_attempts_abandoned` (counters): task
///   attempts a graceful stop's drain let finish (their outcomes committed), and those it
///   abandoned at its deadline (they run again after a resume).
/// - `workflow_signal_latency` (timer): from a signal version's post (the poster's clock) to its
///   hand-over to a consumer in this process.
struct StoreMetrics: Sendable {
    let commits: Counter
    let commitFailures: Counter
    let entriesCommitted: Counter
    let actionsApplied: Counter
    let commitEntries: Recorder
    let commitInstances: Recorder
    let commitDuration: CoreMetrics.Timer
    let replayDuration: CoreMetrics.Timer
    let replayedEntries: Counter
    let instancesFailed: Counter
    let instancesByStatus: [InstanceStatus: Gauge]
    let signalLatency: CoreMetrics.Timer
    let attemptsDrained: Counter
    let attemptsAbandoned: Counter

    init(store: String, factory: (any MetricsFactory)?) {
        let dimensions = [("store", store)]
        let factory = factory ?? MetricsSystem.factory
        commits = Counter(label: "workflow_commits", dimensions: dimensions, factory: factory)
        commitFailures = Counter(label: "workflow_commit_failures", dimensions: dimensions, factory: factory)
        entriesCommitted = Counter(label: "workflow_entries_committed", dimensions: dimensions, factory: factory)
        actionsApplied = Counter(label: "workflow_actions_applied", dimensions: dimensions, factory: factory)
        commitEntries = Recorder(label: "workflow_commit_entries", dimensions: dimensions, factory: factory)
        commitInstances = Recorder(label: "workflow_commit_instances", dimensions: dimensions, factory: factory)
        commitDuration = CoreMetrics.Timer(label: "workflow_commit_duration", dimensions: dimensions, factory: factory)
        replayDuration = CoreMetrics.Timer(label: "workflow_replay_duration", dimensions: dimensions, factory: factory)
        replayedEntries = Counter(label: "workflow_replayed_entries", dimensions: dimensions, factory: factory)
        instancesFailed = Counter(label: "workflow_instances_failed", dimensions: dimensions, factory: factory)
        var gauges: [InstanceStatus: Gauge] = [:]
        for status in InstanceStatus.allCases {
            gauges[status] = Gauge(label: "workflow_instances", dimensions: dimensions + [("status", status.rawValue)], factory: factory)
        }
        instancesByStatus = gauges
        signalLatency = CoreMetrics.Timer(label: "workflow_signal_latency", dimensions: dimensions, factory: factory)
        attemptsDrained = Counter(label: "workflow_task_attempts_drained", dimensions: dimensions, factory: factory)
        attemptsAbandoned = Counter(label: "workflow_task_attempts_abandoned", dimensions: dimensions, factory: factory)
    }

    /// A round wrote `entries` entries (`actions` of them actions) of `instances` instances in `duration`.
    func committed(entries: Int, actions: Int, instances: Int, duration: Duration) {
        commits.increment()
        entriesCommitted.increment(by: entries)
        actionsApplied.increment(by: actions)
        commitEntries.record(entries)
        commitInstances.record(instances)
        commitDuration.record(duration: duration)
    }

    /// A resume replayed `entries` entries in `duration`.
    func replayed(entries: UInt64, duration: Duration) {
        replayedEntries.increment(by: entries)
        replayDuration.record(duration: duration)
    }
}

extension CoreMetrics.Timer {
    func record(duration: Duration) {
        let (seconds, attoseconds) = duration.components
        recordNanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }
}
