module cairndb.dev/ycsb

go 1.19

require (
	github.com/magiconair/properties v1.8.0
	github.com/pingcap/go-ycsb v1.0.3
	github.com/spf13/cobra v1.0.0
)

require (
	github.com/HdrHistogram/hdrhistogram-go v1.1.2 // indirect
	github.com/go-sql-driver/mysql v1.6.0 // indirect
	github.com/inconshreveable/mousetrap v1.0.0 // indirect
	github.com/mattn/go-runewidth v0.0.9 // indirect
	github.com/olekukonko/tablewriter v0.0.5 // indirect
	github.com/pingcap/errors v0.11.5-0.20211224045212-9687c2b0f87c // indirect
	github.com/spf13/pflag v1.0.3 // indirect
	go.uber.org/atomic v1.9.0 // indirect
)
