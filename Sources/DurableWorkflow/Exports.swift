// The codecs are part of the engine's API (`DurableConfiguration.codec`, `BinaryPayloadRepresentable`
// actions): a user who imports DurableWorkflow has them.
@_exported import WorkflowCodec
