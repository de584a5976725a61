module github.com/pgjobs/pgjobs

go 1.26.8

require (
	github.com/alecthomas/participle/v2 v2.1.4
	github.com/jackc/pgx/v5 v5.12.0
	github.com/robfig/cron/v3 v3.0.1
	github.com/urfave/cli/v2 v2.27.7
	golang.org/x/sync v0.22.0
	gopkg.in/natefinch/lumberjack.v2 v2.2.1
)

require (
	github.com/cpuguy83/go-md2man/v2 v2.0.7 // indirect
	github.com/jackc/pgpassfile v1.0.0 // indirect
	github.com/jackc/pgservicefile v0.0.0-20240606120523-5a60cdf6a761 // indirect
	github.com/jackc/puddle/v2 v2.2.3 // indirect
	github.com/russross/blackfriday/v2 v2.1.0 // indirect
	github.com/xrash/smetrics v0.0.0-20240521201337-686a1a2994c1 // indirect
	golang.org/x/text v0.41.0 // indirect
)
