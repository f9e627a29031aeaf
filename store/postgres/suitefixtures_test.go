package postgres

import (
	"testing"

	"github.com/fleetcam/fleetcam/store/enginetest"
)

// The fixtures PostgreSQL's own tests share with the engine suite.
var (
	eventT0            = enginetest.EventT0
	newEvent           = enginetest.NewEvent
	eventIDs           = enginetest.EventIDs
	alarmTime          = enginetest.AlarmTime
	newAlarm           = enginetest.NewAlarm
	jsonEqual          = enginetest.JSONEqual
	ownerCutoffs       = enginetest.OwnerCutoffs
	seriesPurge        = enginetest.SeriesPurge
	gpsAt              = enginetest.GPSAt
	fullDeviceSettings = enginetest.FullDeviceSettings
)

// seedAlarms inserts the directory records alarms refer to
// (enginetest.SeedAlarms).
func seedAlarms(t *testing.T, e *Engine) enginetest.AlarmFixture { return enginetest.SeedAlarms(t, e) }
