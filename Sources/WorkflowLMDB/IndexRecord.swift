import WorkflowStorage

/// How an instance's index record is laid out in an LMDB store. It is kept in two places so that
/// a log commit touches one B-tree: the static part (key, type, created, codec) under the id in
/// `instances`, written once; the mutable part (status, updated, last sequence, last snapshot,
/// claim) in `log` under ``stateKey(_:)``, after every entry of the instance, on the page its
/// commits write anyway.
enum IndexRecord {
    /// Where the mutable part of instance `key` lives in the log.
    static func stateKey(_ key: UInt64) -> LogKey { LogKey(instance: key, sequence: .max) }

    static func encodedStatic(_ instance: StoredInstance) -> [UInt8] {
        var writer = ByteWriter()
        writer.write(UInt8(2))
        writer.write(instance.key)
        writer.write(instance.created)
        writer.write(instance.workflowType)
        writer.write(instance.codec)
        return writer.bytes
    }

    static func encodedState(_ instance: StoredInstance) -> [UInt8] {
        var writer = ByteWriter()
        writer.write(UInt8(1))
        writer.write(UInt8(InstanceStatus.allCases.firstIndex(of: instance.status)!))
        writer.write(instance.updated)
        writer.write(instance.lastSequence)
        writer.write(instance.lastSnapshot)
        writer.write(instance.claim.pid)
        writer.write(instance.claim.processStart)
        writer.write(instance.claim.token)
        return writer.bytes
    }

    /// The static part of instance `id`; the mutable fields are zero until ``withState(_:_:)``
    /// fills them. Version 1 (before codecs were recorded) was always written with JSON.
    static func decodeStatic(_ bytes: UnsafeRawBufferPointer, id: String) -> StoredInstance? {
        var reader = ByteReader(bytes)
        do {
            let version = try reader.read(UInt8.self)
            guard version == 1 || version == 2 else { return nil }
            let key = try reader.read(UInt64.self)
            let created = try reader.read(Int64.self)
            let type = try reader.readString()
            let codec = version >= 2 ? try reader.readString() : "json"
            return StoredInstance(id: id, key: key, workflowType: type, codec: codec, status: .running, created: created, updated: created,
                                  lastSequence: 0, lastSnapshot: 0, claim: .none)
        } catch {
            return nil
        }
    }

    /// `instance` with the mutable part decoded from `bytes`, or `nil` when they are corrupt.
    static func withState(_ instance: StoredInstance, _ bytes: UnsafeRawBufferPointer) -> StoredInstance? {
        var reader = ByteReader(bytes)
        do {
            guard try reader.read(UInt8.self) == 1 else { return nil }
            let statusIndex = Int(try reader.read(UInt8.self))
            guard statusIndex < InstanceStatus.allCases.count else { return nil }
            var copy = instance
            copy.status = InstanceStatus.allCases[statusIndex]
            copy.updated = try reader.read(Int64.self)
            copy.lastSequence = try reader.read(UInt64.self)
            copy.lastSnapshot = try reader.read(UInt64.self)
            copy.claim = InstanceClaim(
                pid: try reader.read(Int32.self), processStart: try reader.read(UInt64.self), token: try reader.read(UInt64.self))
            return copy
        } catch {
            return nil
        }
    }
}
