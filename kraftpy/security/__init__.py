"""Who may do what: principals, ACLs and their authorizer, SCRAM credentials and TLS contexts.

Shared by the controller, the brokers and the tools, as Kafka's org.apache.kafka.common.security
and metadata.authorizer are: an ACL or a credential is a metadata record, replayed everywhere."""
