import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Cross-process wake-ups: each process binds a datagram socket in the store's `wake/`
/// directory; after a post commits, the poster sends one byte to every socket there (rule S6).
/// A wake-up is only a hint that the store changed: receivers re-read the store.
final class WakeChannel: @unchecked Sendable {
    // @unchecked Sendable: `fd` and `path` never change after init; `peers` and `refreshed` are
    // guarded by `lock`; sending and receiving on one datagram socket from two threads is safe.

    let directory: String
    let path: String
    private let fd: Int32
    private let lock = NSLock()
    private var peers: [String] = []
    private var refreshed = ContinuousClock.now - .seconds(60)

    /// Binds this process's socket, or returns `nil` where that is impossible (a path too long
    /// for a Unix socket, a read-only store): the dispatcher then falls back to polling.
    init?(storePath: String) {
        let directory = storePath + "/wake"
        mkdir(directory, 0o777)
        let path = "\(directory)/\(getpid())-\(UInt32.random(in: 0...UInt32.max)).sock"
        // Every stored property is set only once the socket is bound: a failed initializer that
        // had set them all would run `deinit`, closing the socket a second time (by then perhaps
        // a descriptor another thread had just opened).
        guard let fd = Self.boundSocket(at: path) else { return nil }
        self.directory = directory
        self.path = path
        self.fd = fd
    }

    /// A non-blocking datagram socket bound at `path`, or `nil` (nothing left open).
    private static func boundSocket(at path: String) -> Int32? {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard path.utf8.count < capacity else { return nil }
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: path.utf8)
            raw[path.utf8.count] = 0
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0 else {
            close(fd)
            return nil
        }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        return fd
    }

    deinit {
        close(fd)
        unlink(path)
    }

    /// Waits up to `timeout` for a wake-up; returns whether one arrived (all pending ones are consumed).
    func wait(timeout: Duration) -> Bool {
        var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let millis = Int32(max(0, timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000))
        guard poll(&descriptor, 1, millis) > 0 else { return false }
        var buffer = [UInt8](repeating: 0, count: 64)
        while recv(fd, &buffer, buffer.count, 0) > 0 {}
        return true
    }

    /// Wakes every other process with a socket in the directory; removes sockets of processes
    /// that are gone.
    func wakeOthers() {
        for peer in currentPeers() where peer != path && !send(to: peer) {
            unlink(peer)
            lock.withLock { peers.removeAll { $0 == peer } }
        }
    }

    /// Wakes this process's own dispatcher.
    func wakeSelf() {
        _ = send(to: path)
    }

    private func currentPeers() -> [String] {
        lock.withLock {
            if ContinuousClock.now - refreshed > .milliseconds(500) {
                let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
                peers = names.filter { $0.hasSuffix(".sock") }.map { "\(directory)/\($0)" }
                refreshed = .now
            }
            return peers
        }
    }

    /// Sends one byte to `peer`; `false` when nobody is listening there any more.
    private func send(to peer: String) -> Bool {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        guard peer.utf8.count < MemoryLayout.size(ofValue: address.sun_path) else { return false }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: peer.utf8)
            raw[peer.utf8.count] = 0
        }
        var byte: UInt8 = 1
        let sent = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                sendto(fd, &byte, 1, Int32(MSG_DONTWAIT), $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        // A full receive buffer (EAGAIN) means a wake-up is already pending there: that is fine.
        return sent == 1 || errno == EAGAIN || errno == EWOULDBLOCK
    }
}
