package store

import (
	"fmt"
	"strconv"
	"time"
)

// Whole-partition purge: an engine that keeps GPS samples or events in
// time partitions (store/postgres keeps a partition per day) can delete a
// partition at once, which costs the same for a million records as for
// one. The rule stays here: a partition goes only when every record in it
// is due, as the record-by-record purge would have found each of them; a
// partition with one record that is not yet due is left to that purge.
// The partition steps run before the record-by-record steps of the same
// kind, which then find only what no whole partition held.

// SeriesPartition is one time partition of a series: the records from
// Start, inclusive, to End, exclusive.
type SeriesPartition struct {
	// Name is the engine's name of the partition.
	Name       string
	Start, End time.Time
}

// PartitionedSeries is what an engine that keeps a series in time
// partitions offers the purge. The store finds it on the record set of the
// series (GPSSampleRecords, EventSet) by type assertion: an engine without
// partitions does not implement it.
type PartitionedSeries interface {
	// Partitions returns the partitions of the series that end at or
	// before before, by start, oldest first. A default partition that holds
	// records of any time is not among them.
	Partitions(before time.Time) ([]SeriesPartition, error)
}

// GPSPartitions is PartitionedSeries for the GPS samples.
type GPSPartitions interface {
	PartitionedSeries
	// IMEIs returns the devices with samples in p, in IMEI order.
	IMEIs(p SeriesPartition) ([]string, error)
	// HasOthers reports whether p holds a sample of imei recorded for an
	// ownership not in ownerships.
	HasOthers(p SeriesPartition, imei string, ownerships []int64) (bool, error)
	// Drop deletes every sample of p at once and returns how many there
	// were.
	Drop(p SeriesPartition) (int, error)
}

// EventPartitions is PartitionedSeries for the events.
type EventPartitions interface {
	PartitionedSeries
	// Organizations returns the organizations with events in p.
	Organizations(p SeriesPartition) ([]int64, error)
	// WithFiles returns up to limit events of p that have files.
	WithFiles(p SeriesPartition, limit int) ([]Event, error)
	// Drop deletes every event of p, which has none with files left, at
	// once, with their comments, and returns how many there were.
	Drop(p SeriesPartition) (int, error)
}

// dueThrough reports which of the device's ownerships have every record
// recorded before end due: those whose organization's cutoff is at or
// after end. all is true when that is every ownership a record of the
// device can be stamped with, the unnumbered ownership 0 included.
func (oc *OwnerCutoffs) dueThrough(end time.Time) (due []int64, all bool) {
	all = true
	for ownership, org := range oc.orgs {
		if t, ok := oc.cut[org]; ok && !t.Before(end) {
			due = append(due, ownership)
		} else {
			all = false
		}
	}
	if _, ok := oc.orgs[0]; !ok {
		all = false
	}
	return due, all
}

// firstDue returns the first partition of s that ends by the latest
// cutoff, starts at or after the resume position from (the start, in unix
// milliseconds, of the partition a batch stopped at) and that due admits;
// nil when there is none.
func firstDue(s PartitionedSeries, cut Cutoffs, from []byte, due func(SeriesPartition) (bool, error)) (*SeriesPartition, error) {
	parts, err := s.Partitions(cut.Latest())
	if err != nil {
		return nil, err
	}
	var at time.Time
	if from != nil {
		if at, err = decodeMilli(from); err != nil {
			return nil, err
		}
	}
	for _, p := range parts {
		if from != nil && p.Start.Before(at) {
			continue
		}
		if ok, err := due(p); err != nil || ok {
			return &p, err
		}
	}
	return nil, nil
}

// dropGPSPartitions is the partition step of the GPS purge: it drops the
// first partition every sample of which is due, and resumes there.
func dropGPSPartitions(tx *Tx, cut Cutoffs, from []byte, _ int) (int, []byte, error) {
	s, ok := tx.rec.GPSSamples().(GPSPartitions)
	if !ok {
		return 0, nil, nil
	}
	owners := seriesPurge(tx, cut, nil, 0).Owners
	p, err := firstDue(s, cut, from, func(p SeriesPartition) (bool, error) { return gpsPartitionDue(s, p, owners) })
	if err != nil || p == nil {
		return 0, nil, err
	}
	n, err := s.Drop(*p)
	if err != nil {
		return 0, nil, err
	}
	return n, encodeMilli(p.Start), nil
}

// gpsPartitionDue reports whether every sample of p is due.
func gpsPartitionDue(s GPSPartitions, p SeriesPartition, owners func(string) (*OwnerCutoffs, error)) (bool, error) {
	imeis, err := s.IMEIs(p)
	if err != nil {
		return false, err
	}
	for _, imei := range imeis {
		oc, err := owners(imei)
		if err != nil {
			return false, err
		}
		due, all := oc.dueThrough(p.End)
		if all {
			continue
		}
		if others, err := s.HasOthers(p, imei, due); err != nil || others {
			return false, err
		}
	}
	return true, nil
}

// dropEventPartitions is the partition step of the event purge. For the
// first partition every event of which is due, a batch releases the media
// of up to limit events with files, as their own purge would, and leaves
// them without files; once none has files, a batch drops the partition.
func dropEventPartitions(tx *Tx, cut Cutoffs, from []byte, limit int) (int, []byte, error) {
	s, ok := tx.rec.Events().(EventPartitions)
	if !ok {
		return 0, nil, nil
	}
	p, err := firstDue(s, cut, from, func(p SeriesPartition) (bool, error) {
		orgs, err := s.Organizations(p)
		return err == nil && cut.allThrough(orgs, p.End), err
	})
	if err != nil || p == nil {
		return 0, nil, err
	}
	withFiles, err := s.WithFiles(*p, limit)
	if err != nil {
		return 0, nil, err
	}
	for i := range withFiles {
		e := &withFiles[i]
		if err := tx.unrefEventMedia(e); err != nil {
			return 0, nil, err
		}
		e.Files = nil
		if err := tx.rec.Events().Update(e); err != nil {
			return 0, nil, err
		}
	}
	if len(withFiles) > 0 {
		return 0, encodeMilli(p.Start), nil
	}
	n, err := s.Drop(*p)
	if err != nil {
		return 0, nil, err
	}
	return n, encodeMilli(p.Start), nil
}

// allThrough reports whether every record of the organizations orgs made
// before end is due: each has a cutoff at or after end.
func (c Cutoffs) allThrough(orgs []int64, end time.Time) bool {
	for _, org := range orgs {
		if t, ok := c[org]; !ok || t.Before(end) {
			return false
		}
	}
	return true
}

// encodeMilli is the resume position of a partition step: the partition's
// start in unix milliseconds, in decimal.
func encodeMilli(t time.Time) []byte { return strconv.AppendInt(nil, t.UnixMilli(), 10) }

// decodeMilli reads a resume position encodeMilli wrote.
func decodeMilli(b []byte) (time.Time, error) {
	ms, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("store: partition purge resume position %q: %w", b, err)
	}
	return time.UnixMilli(ms).UTC(), nil
}
