import Workflow
import WorkflowCodec

/// Every node's state at one sequence, plus the root props and worker start sequences: enough to
/// resume without replaying what came before (rule D5).
struct Snapshot: Sendable {
    let sequence: UInt64
    let rootProps: [UInt8]
    let states: [NodePath: [UInt8]]
    let workerStarts: [String: UInt64]
    /// The sequence up to which root outputs were acknowledged when it was taken (0 in format 1).
    let acknowledgedThrough: UInt64
    /// Whether an output emitted before it was not acknowledged yet (a host whose outputs wait
    /// for acknowledgements must replay from before it to deliver it again; false in format 1).
    let hasUnacknowledgedOutputs: Bool
    /// Workflow name to the version of its state's stored form in `states`, for the types whose
    /// version is not 1 (``VersionedState``; format 3, empty before).
    var stateVersions: [String: Int] = [:]
    /// The instance's version markers at `sequence` (format 3, empty before).
    var versionMarkers: [String: Int] = [:]
    /// What control requests had done to the tree at `sequence` (rule O2; format 4, the initial
    /// state before).
    var control = ControlState()

    /// The version of the form the state at `path` is stored in.
    func storedVersion(at path: NodePath) -> Int {
        path.segments.last.flatMap { stateVersions[$0.workflowType] } ?? 1
    }

    static func workerKey(_ path: NodePath, _ key: String) -> String { "\(path)#\(key)" }

    static func capture(
        sequence: UInt64, rootProps: [UInt8], tree: any RuntimeTree, codec: any PayloadCodec, store: String, instance: String,
        versionMarkers: [String: Int] = [:]
    ) throws -> Snapshot {
        var states: [NodePath: [UInt8]] = [:]
        var versions: [String: Int] = [:]
        for (path, state) in tree.nodeStates() {
            states[path] = try StateCoding.encode(state, codec: codec, what: path.description, store: store, instance: instance)
            let version = StateForms.version(of: type(of: state))
            if version != 1, let name = path.segments.last?.workflowType { versions[name] = version }
        }
        var workers: [String: UInt64] = [:]
        for start in tree.workerStarts() { workers[workerKey(start.path, start.key)] = start.sequence }
        return Snapshot(sequence: sequence, rootProps: rootProps, states: states, workerStarts: workers,
                        acknowledgedThrough: tree.acknowledgedThrough,
                        hasUnacknowledgedOutputs: tree.lastOutputSequence > tree.acknowledgedThrough,
                        stateVersions: versions, versionMarkers: versionMarkers, control: tree.controlState)
    }

    /// The stored form: format 4 when control requests changed the tree, else format 3 when it
    /// has state versions or version markers, else format 2 (which builds before them read).
    func encoded() -> [UInt8] {
        let controlled = !control.isInitial
        let versioned = controlled || !stateVersions.isEmpty || !versionMarkers.isEmpty
        var writer = ByteWriter()
        writer.write(UInt8(controlled ? 4 : versioned ? 3 : 2))
        writer.write(sequence)
        writer.write(acknowledgedThrough)
        writer.write(UInt8(hasUnacknowledgedOutputs ? 1 : 0))
        writer.write(block: rootProps)
        writer.write(UInt32(states.count))
        for (path, state) in states.sorted(by: { $0.key.description < $1.key.description }) {
            writer.write(UInt16(path.segments.count))
            for segment in path.segments {
                writer.write(segment.workflowType)
                writer.write(segment.key)
            }
            writer.write(block: state)
        }
        writer.write(UInt32(workerStarts.count))
        for (key, start) in workerStarts.sorted(by: { $0.key < $1.key }) {
            writer.write(key)
            writer.write(start)
        }
        if versioned {
            for table in [stateVersions, versionMarkers] {
                writer.write(UInt32(table.count))
                for (name, version) in table.sorted(by: { $0.key < $1.key }) {
                    writer.write(name)
                    writer.write(Int64(version))
                }
            }
        }
        if controlled { Self.write(control, to: &writer) }
        var checksum = FNV1a64()
        checksum.combine(writer.bytes)
        writer.write(checksum.value)
        return writer.bytes
    }

    static func decode(_ bytes: UnsafeRawBufferPointer) -> Snapshot? {
        guard bytes.count > 8 else { return nil }
        var checksum = FNV1a64()
        checksum.combine(UnsafeRawBufferPointer(rebasing: bytes[..<(bytes.count - 8)]))
        guard bytes.loadUnaligned(fromByteOffset: bytes.count - 8, as: UInt64.self).littleEndian == checksum.value else { return nil }
        var reader = ByteReader(UnsafeRawBufferPointer(rebasing: bytes[..<(bytes.count - 8)]))
        do {
            let format = try reader.read(UInt8.self)
            guard (1...4).contains(format) else { return nil }
            let sequence = try reader.read(UInt64.self)
            let acknowledged = format >= 2 ? try reader.read(UInt64.self) : 0
            let unacknowledged = format >= 2 ? try reader.read(UInt8.self) == 1 : false
            let props = try reader.readBlock()
            var states: [NodePath: [UInt8]] = [:]
            for _ in 0..<(try reader.read(UInt32.self)) {
                var segments: [NodePath.Segment] = []
                for _ in 0..<(try reader.read(UInt16.self)) {
                    segments.append(.init(workflowType: try reader.readString(), key: try reader.readString()))
                }
                states[NodePath(segments: segments)] = try reader.readBlock()
            }
            var workers: [String: UInt64] = [:]
            for _ in 0..<(try reader.read(UInt32.self)) {
                let key = try reader.readString()
                workers[key] = try reader.read(UInt64.self)
            }
            var tables: [[String: Int]] = [[:], [:]]
            if format >= 3 {
                for index in tables.indices {
                    for _ in 0..<(try reader.read(UInt32.self)) {
                        let name = try reader.readString()
                        tables[index][name] = Int(try reader.read(Int64.self))
                    }
                }
            }
            let control = format >= 4 ? try readControl(&reader) : ControlState()
            guard reader.remaining == 0 else { return nil }
            return Snapshot(sequence: sequence, rootProps: props, states: states, workerStarts: workers, acknowledgedThrough: acknowledged,
                            hasUnacknowledgedOutputs: unacknowledged, stateVersions: tables[0], versionMarkers: tables[1],
                            control: control)
        } catch {
            return nil
        }
    }
}

extension Snapshot {
    /// Format 4's control block: paused (a byte), the last request (UInt64), a cancellation in
    /// progress (a byte; then a flag byte, 1: reason, 2: deadline; the reason; requestedAt and
    /// the deadline, Int64 ns).
    fileprivate static func write(_ control: ControlState, to writer: inout ByteWriter) {
        writer.write(UInt8(control.paused ? 1 : 0))
        writer.write(control.lastRequest)
        guard let cancellation = control.cancellation else { return writer.write(UInt8(0)) }
        writer.write(UInt8(1))
        writer.write(UInt8((cancellation.reason == nil ? 0 : 1) | (cancellation.deadline == nil ? 0 : 2)))
        if let reason = cancellation.reason { writer.write(reason) }
        writer.write(cancellation.requestedAt.nanosecondsSinceEpoch)
        if let deadline = cancellation.deadline { writer.write(deadline.nanosecondsSinceEpoch) }
    }

    fileprivate static func readControl(_ reader: inout ByteReader) throws(ByteReader.Truncated) -> ControlState {
        var control = ControlState()
        control.paused = try reader.read(UInt8.self) == 1
        control.lastRequest = try reader.read(UInt64.self)
        if try reader.read(UInt8.self) == 1 {
            let flags = try reader.read(UInt8.self)
            let reason = flags & 1 != 0 ? try reader.readString() : nil
            let requestedAt = WallTime(nanosecondsSinceEpoch: try reader.read(Int64.self))
            let deadline = flags & 2 != 0 ? WallTime(nanosecondsSinceEpoch: try reader.read(Int64.self)) : nil
            control.cancellation = CancellationRequest(reason: reason, requestedAt: requestedAt, deadline: deadline)
        }
        return control
    }
}

/// A snapshot the running build cannot rebuild its tree from (rule D11): the engine never takes
/// it for the initial state, and replays the whole log instead.
struct SnapshotMismatch: Error, CustomStringConvertible {
    /// The snapshot's sequence.
    let sequence: UInt64
    let cause: Cause

    enum Cause {
        /// The state recorded for the node at `path` does not decode as `type`.
        case undecodable(path: NodePath, type: String, error: String)
        /// No node of this build's first render pass took the states recorded at these paths.
        case unclaimed([NodePath])
    }

    /// The node the cause concerns (the first, for unclaimed states).
    var nodePath: String? {
        switch cause {
        case .undecodable(let path, _, _): path.description
        case .unclaimed(let paths): paths.first?.description
        }
    }

    var description: String {
        switch cause {
        case .undecodable(let path, let type, let error):
            "the snapshot at \(sequence) holds a state for \(path) that does not decode as \(type): \(error)"
        case .unclaimed(let paths):
            "the snapshot at \(sequence) holds states for \(paths.map(\.description).joined(separator: ", ")), which this build's render "
                + "no longer declares"
        }
    }
}
