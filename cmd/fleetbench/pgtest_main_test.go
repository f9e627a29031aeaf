package main

import (
	"testing"

	"github.com/fleetcam/fleetcam/store/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }
