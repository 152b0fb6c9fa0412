"""Real RocketMQ client programs (test peers) that the interop tests drive against Longboat."""
