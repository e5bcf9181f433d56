"""Schemas of Kafka messages, written as data (see protocol.schema for the vocabulary)."""
