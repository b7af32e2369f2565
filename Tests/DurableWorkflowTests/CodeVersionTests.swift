import DurableWorkflow
import Logging
import TestSupport
import Testing
import Workflow
import WorkflowLMDB

@Suite("Code versions: each instance keeps the one it started under (V1, V4)")
struct CodeVersionTests {
    /// A store with instances "a-N" started under "2026.11", "b-N" under "2026.12" and "u-N" under none.
    func seed(_ dir: TemporaryDirectory) throws {
        let store = try WorkflowStore.open(path: dir.path)
        for (prefix, version) in [("a", "2026.11"), ("b", "2026.12"), ("u", nil)] as [(String, String?)] {
            for index in 0..<3 {
                let host = try store.start(MarkedOrder<PricingV1>(), id: "\(prefix)-\(index)",
                                           configuration: MarkedOrder<PricingV1>.configuration(codeVersion: version))
                host.rendering.1.send(.init(price: 10))
                host.stop()
            }
        }
    }

    @Test("the code version a build starts an instance under stays with it for life: listed, filtered, read by apply and render, kept by resumes under other versions")
    func carriedForLife() throws {
        let dir = TemporaryDirectory("code-version")
        try seed(dir)
        let store = try WorkflowStore.open(path: dir.path)
        #expect(try store.instance(id: "a-0")?.codeVersion == "2026.11")
        #expect(try store.instance(id: "u-0")?.codeVersion == nil)
        #expect(try store.instances(codeVersion: "2026.12").map(\.id) == ["b-0", "b-1", "b-2"])
        #expect(try store.instances(codeVersion: .some(nil)).map(\.id) == ["u-0", "u-1", "u-2"])
        // Resumed by a build with another code version: the instance keeps its own.
        let host = try store.resume(id: "a-0", as: MarkedOrder<PricingV1>.self, configuration: MarkedOrder<PricingV1>.configuration(codeVersion: "2027.01"))
        #expect(host.rendering.0.code == "2026.11")
        host.rendering.1.send(.init(price: 20))
        #expect(host.rendering.0.code == "2026.11")
        host.stop()
        #expect(try store.instance(id: "a-0")?.codeVersion == "2026.11")
    }

    @Test("a build that runs only its own code version leaves the others' instances unclaimed: resumeAll lists each with unsupportedCodeVersion (one warning counts them), resume refuses them, and the rest run")
    func onlySupportedVersionsRun() throws {
        let dir = TemporaryDirectory("code-version-supported")
        try seed(dir)
        let warnings = KeptWarnings()
        var configuration = MarkedOrder<PricingV1>.configuration(codeVersion: "2026.12")
        configuration.supportedCodeVersions = .only(["2026.12"])
        configuration.logger = Logger(label: "test") { _ in warnings }
        let store = try WorkflowStore.open(path: dir.path)
        let results = try store.resumeAll(MarkedOrder<PricingV1>.self, configuration: configuration)
        #expect(results.map(\.id) == ["a-0", "a-1", "a-2", "b-0", "b-1", "b-2", "u-0", "u-1", "u-2"])
        for result in results {
            if result.id.hasPrefix("b") {
                #expect(result.host != nil, "\(result.id): \(String(describing: result.error))")
            } else {
                #expect(result.error?.kind == .unsupportedCodeVersion, "\(result.id): \(String(describing: result.error))")
            }
            result.host?.stop()
        }
        #expect(warnings.messages.filter { $0.contains("code versions this build does not run") }.count == 1)
        #expect(warnings.messages.contains { $0.contains("2026.11: 3") && $0.contains("none: 3") }, "\(warnings.messages)")
        #expect(try store.instances(status: .running).count == 9)
        let refused = expectDurableError(.unsupportedCodeVersion) {
            _ = try store.resume(id: "a-1", as: MarkedOrder<PricingV1>.self, configuration: configuration)
        }
        #expect(refused?.detail.contains("\"2026.11\"") == true, "\(String(describing: refused))")
        // Instances from before versions were configured, when the build says it runs them.
        configuration.supportedCodeVersions = .only(["2026.12"], unversioned: true)
        let host = try store.resume(id: "u-1", as: MarkedOrder<PricingV1>.self, configuration: configuration)
        host.stop()
    }
}
