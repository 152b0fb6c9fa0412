"""The broker's state machines, each with its transition table and invariants in its module
docstring: held pulls and parked pops (`hold`), consumer groups (`consumers`), producers
(`producers`), queue locks (`queue_locks`), topics (`topics`), subscription groups
(`subscription_groups`).  Consumer offsets are the store's
(`longboat.store.ConsumerOffsetTable`)."""
