"""The Devices dock: every device by runtime, its properties and measured ceilings."""
