import CLMDB

/// A handle on a named database inside an ``Environment``, typed by its key and value.
///
/// Handles come from ``Environment/database(named:flags:keyType:valueType:)``, which opens each
/// name once per environment and keeps it for the environment's lifetime (LMDB's rule). The
/// handle is a small value: copy it freely, share it between threads.
public struct Database<Key, Value>: Sendable, Hashable {
    /// The name it was opened under (`nil` for the unnamed main database).
    public let name: String?
    let dbi: MDB_dbi

    init(name: String?, dbi: MDB_dbi) {
        self.name = name
        self.dbi = dbi
    }

    /// The same database seen with other key and value types.
    public func retyped<K, V>(key: K.Type = K.self, value: V.Type = V.self) -> Database<K, V> {
        Database<K, V>(name: name, dbi: dbi)
    }

    var label: String { name.map { "'\($0)'" } ?? "the main database" }
}

/// Options for a named database, fixed when it is first created.
public struct DatabaseFlags: OptionSet, Sendable, Hashable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// Keys compare as native-endian unsigned integers of equal size (`MDB_INTEGERKEY`).
    public static let integerKey = DatabaseFlags(rawValue: UInt32(MDB_INTEGERKEY))
    /// A key may hold several sorted values (`MDB_DUPSORT`).
    public static let duplicateSort = DatabaseFlags(rawValue: UInt32(MDB_DUPSORT))
    /// Keys compare from the last byte to the first (`MDB_REVERSEKEY`).
    public static let reverseKey = DatabaseFlags(rawValue: UInt32(MDB_REVERSEKEY))
}
