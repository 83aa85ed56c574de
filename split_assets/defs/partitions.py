"""One dynamic partition per diagnosis fingerprint: signals of different judges never mix."""

from dagster import DynamicPartitionsDefinition

diag_fingerprint_partitions = DynamicPartitionsDefinition(name="diag_fingerprint")
