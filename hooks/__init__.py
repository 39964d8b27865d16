"""The push pipeline: hook events → durable jobs → diff → plan → index → commit back → load."""
