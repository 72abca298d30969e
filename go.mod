module github.com/kafka-disk-guard/kafka-disk-guard

go 1.26
