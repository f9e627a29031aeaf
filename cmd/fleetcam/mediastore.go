package main

import (
	"context"
	"fmt"
	"time"

	"github.com/fleetcam/fleetcam/cloudapi"
	"github.com/fleetcam/fleetcam/configs"
	"github.com/fleetcam/fleetcam/store/blob"
)

// mediaCheckTimeout bounds the start-up check of a media bucket.
const mediaCheckTimeout = 30 * time.Second

// s3Options are the settings of the media bucket for blob.NewS3.
func s3Options(s configs.MediaS3) blob.S3Options {
	return blob.S3Options{Endpoint: s.Endpoint, PublicEndpoint: s.PublicEndpoint, Bucket: s.Bucket, Region: s.Region, Prefix: s.Prefix,
		AccessKey: s.AccessKey, SecretKey: s.SecretKey, PathStyle: s.PathStyle, InsecureSkipVerify: s.TLSInsecureSkipVerify,
		PartSize: uint64(s.PartSizeMB) << 20}
}

// openMediaBucket opens the bucket of media.s3 and checks that it exists
// and takes a write, so that a bucket fleetcam cannot use stops it before
// it touches anything; nil without media.s3.endpoint (media in media.dir,
// which the API opens).
func openMediaBucket(ctx context.Context, cfg configs.Config) (*blob.S3, error) {
	if !cfg.Media.S3.Enabled() {
		return nil, nil
	}
	s3, err := blob.NewS3(s3Options(cfg.Media.S3))
	if err != nil {
		return nil, fmt.Errorf("media.s3: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, mediaCheckTimeout)
	defer cancel()
	if err := s3.Check(ctx); err != nil {
		return nil, fmt.Errorf("media.s3.endpoint %s, media.s3.bucket %s: %w (check the endpoint, the bucket, its region and the keys: "+
			"media.s3.* or FLEETCAM_MEDIA_S3_*)", cfg.Media.S3.Endpoint, cfg.Media.S3.Bucket, err)
	}
	return s3, nil
}

// withMediaBucket gives the API the bucket, counted in metrics, and its
// presigned links unless media.s3.proxy keeps downloads in fleetcam.
func withMediaBucket(deps *cloudapi.Deps, s3 *blob.S3, cfg configs.Config) error {
	if s3 == nil {
		return nil
	}
	observed, err := blob.Observe(s3, "s3", deps.Registerer)
	if err != nil {
		return err
	}
	deps.Blobs = observed
	if !cfg.Media.S3.Proxy {
		deps.MediaLinks = s3
	}
	return nil
}
