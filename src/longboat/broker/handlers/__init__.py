"""The remoting protocol adapter: one module per group of request codes, each an
`install(host)` that registers its handlers.  A handler decodes the request, calls the core
(`longboat.broker.core`) or a state machine, and encodes the answer."""
