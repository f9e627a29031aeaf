package store

// AlarmRecords are the record sets of alarms, their notes, the health state behind them and their recipients, whose rules are in alarms.go, alarmhealth.go, alarmrecipients.go, alarmlist.go.
type AlarmRecords interface{}
