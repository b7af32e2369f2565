import DurableWorkflow
import Foundation
import Workflow
import WorkflowSignals

/// The showcase's workflow: upload some files (one child workflow each, each running a worker),
/// then wait for an "upload finished" confirmation signal from another process, and finish no
/// earlier than a hold deadline set when the job began (a durable timer). It finishes by its own
/// decision: the action that completes it emits the job's summary, its final output.
public struct UploadJob: FinishingWorkflow, Codable, Sendable {
    /// The job's name.
    public let job: String
    /// The files to upload, and how long each upload takes (milliseconds).
    public let files: [String: Int]
    /// The signal that confirms the upload (posted by another process).
    public let confirmation: SignalID
    /// The job finishes no earlier than this many seconds after it began.
    public let holdSeconds: Int

    public init(job: String, files: [String: Int], confirmation: SignalID, holdSeconds: Int) {
        self.job = job
        self.files = files
        self.confirmation = confirmation
        self.holdSeconds = holdSeconds
    }

    public struct State: Codable, Equatable, Sendable {
        public var began: WallTime?
        public var holdUntil: WallTime?
        public var uploaded: [String] = []
        public var confirmedBy: String?
        public var confirmations = 0
        public var holdReleasedAt: WallTime?
        public var finished = false
        /// A job that has not begun.
        public init() {}
    }

    /// What a finished job reports.
    public struct Summary: Equatable, Sendable {
        public let uploaded: [String]
        public let confirmedBy: String
    }

    public typealias Output = Summary

    /// Starts the job (its first action): records when, and sets the hold deadline from the logged time.
    public struct Begin: DurableAction {
        public typealias WorkflowType = UploadJob
        public static let tag = "showcase.begin"
        public init() {}
        public func apply(toState state: inout State, context: ApplyContext<UploadJob>) -> Summary? {
            guard state.began == nil else { return nil }
            state.began = context.now
            state.holdUntil = context.now + .seconds(context.props.holdSeconds)
            return nil
        }
    }

    /// A child's upload finished (applied in the child's output cascade, not logged itself).
    struct FileUploaded: WorkflowAction {
        typealias WorkflowType = UploadJob
        let file: String
        func apply(toState state: inout State) -> Summary? {
            if !state.uploaded.contains(file) { state.uploaded.append(file) }
            state.uploaded.sort()
            return nil
        }
    }

    /// The confirmation signal arrived (logged with origin `.signal`).
    public struct Confirmed: DurableAction {
        public typealias WorkflowType = UploadJob
        public static let tag = "showcase.confirmed"
        public let by: String
        public func apply(toState state: inout State, context: ApplyContext<UploadJob>) -> Summary? {
            state.confirmedBy = by
            state.confirmations += 1
            return state.finishIfComplete(props: context.props)
        }
    }

    /// The hold deadline passed (logged with origin `.timer`).
    public struct HoldReleased: DurableAction {
        public typealias WorkflowType = UploadJob
        public static let tag = "showcase.hold-released"
        public func apply(toState state: inout State, context: ApplyContext<UploadJob>) -> Summary? {
            state.holdReleasedAt = context.now
            return state.finishIfComplete(props: context.props)
        }
    }

    public func makeInitialState() -> State { State() }

    public func render(state: State, context: RenderContext<UploadJob>) -> (state: State, begin: Sink<Begin>) {
        if state.began != nil {
            for (file, duration) in files.sorted(by: { $0.key < $1.key }) where !state.uploaded.contains(file) {
                context.render(FileUpload(file: file, milliseconds: duration), key: file) { FileUploaded(file: $0) }
            }
        }
        if state.uploaded.count == files.count && state.confirmedBy == nil {
            context.awaitSignal(confirmation) { delivery in Confirmed(by: (try? delivery.decode(String.self)) ?? "unknown") }
        }
        if let holdUntil = state.holdUntil, state.holdReleasedAt == nil {
            context.runTimer(key: "hold", fireAt: holdUntil) { HoldReleased() }
        }
        return (state, context.makeSink(of: Begin.self))
    }

    /// The actions of this workflow and its children.
    public static var actions: ActionRegistry {
        ActionRegistry(Begin.self, Confirmed.self, HoldReleased.self, FileUpload.Finished.self)
    }

    /// The configuration its instances run with: strict commits, `center` provided to render.
    public static func configuration(center: SignalCenter) -> DurableConfiguration {
        var configuration = DurableConfiguration(mode: .strict, actions: actions, snapshotEvery: 4)
        configuration.host.provide(center)
        return configuration
    }
}

extension UploadJob.State {
    /// Marks the job finished once every file is uploaded, the confirmation came and the hold
    /// released; returns its summary then (the final output), `nil` before.
    mutating func finishIfComplete(props: UploadJob) -> UploadJob.Summary? {
        guard !finished, uploaded.count == props.files.count, let confirmedBy, holdReleasedAt != nil else { return nil }
        finished = true
        return UploadJob.Summary(uploaded: uploaded, confirmedBy: confirmedBy)
    }
}

/// One file's upload: a worker that takes `milliseconds`, then the child emits the file name.
public struct FileUpload: Workflow, Codable, Sendable {
    public let file: String
    public let milliseconds: Int

    public typealias Output = String

    /// The simulated upload finished (logged with origin `.worker`).
    public struct Finished: DurableAction {
        public typealias WorkflowType = FileUpload
        public static let tag = "showcase.upload-finished"
        public let file: String
        public func apply(toState state: inout Int) -> String? {
            state += 1
            return file
        }
    }

    public func makeInitialState() -> Int { 0 }

    public func render(state: Int, context: RenderContext<FileUpload>) -> Void {
        let file = self.file, milliseconds = self.milliseconds
        context.run(AsyncOperationWorker(identity: file) {
            // A real upload would pass WorkerContext.idempotencyKey to the server, so that an
            // upload restarted after a crash is recognised; the key is the same after a restart.
            UploadLog.record(file: file, key: WorkerContext.idempotencyKey ?? "none")
            try? await Task.sleep(for: .milliseconds(milliseconds))
            return file
        }, key: "upload") { Finished(file: $0) }
    }
}

/// Where the simulated uploads report that they started (the showcase prints it).
public enum UploadLog {
    private static let handler = LockedHandler()

    /// Calls `report` each time an upload starts.
    public static func onUploadStarted(_ report: @escaping @Sendable (String, String) -> Void) { handler.set(report) }

    static func record(file: String, key: String) { handler.call(file, key) }

    private final class LockedHandler: @unchecked Sendable {
        // @unchecked Sendable: `report` is only read and written under `lock`.
        private let lock = NSLock()
        private var report: (@Sendable (String, String) -> Void)?
        func set(_ report: @escaping @Sendable (String, String) -> Void) { lock.withLock { self.report = report } }
        func call(_ file: String, _ key: String) { lock.withLock { report }?(file, key) }
    }
}
