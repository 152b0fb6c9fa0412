"""Message traces (RocketMQ 4.x trace records) and OpenTelemetry spans for the client."""
