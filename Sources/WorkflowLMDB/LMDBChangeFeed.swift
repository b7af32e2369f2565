import Dispatch
import LMDB
import WorkflowStorage

/// Change hints of an LMDB store: LMDB's last transaction id as the position (every process's
/// commits move it), and a datagram socket per subscriber in the store's `wake/` directory
/// (``WakeChannel``). Without a socket (a read-only store, a path too long for one) a subscriber
/// is woken only by its own process and otherwise polls.
struct LMDBChangeFeed: ChangeFeed {
    let environment: Environment
    private let channel: WakeChannel?
    private let localWake = DispatchSemaphore(value: 0)

    init(environment: Environment) {
        self.environment = environment
        self.channel = environment.configuration.readOnly ? nil : WakeChannel(storePath: environment.path)
    }

    var position: UInt64 { environment.lastTransactionID }

    func wait(timeout: Duration) -> Bool {
        if let channel { return channel.wait(timeout: timeout) }
        let (seconds, attoseconds) = timeout.components
        let nanoseconds = Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000)
        return localWake.wait(timeout: .now() + .nanoseconds(nanoseconds)) == .success
    }

    func announce() { channel?.wakeOthers() }

    func wakeSelf() {
        if let channel { channel.wakeSelf() } else { localWake.signal() }
    }
}
