// Package s3 stores a repository in a bucket of an S3-compatible object
// store (AWS S3, MinIO, Ceph RGW, Garage, versitygw, ...), through
// github.com/minio/minio-go/v7. Objects keep the folder layout of a local
// repository under an optional prefix, so that a repository folder copied
// into a bucket opens as is. Credentials come only from the standard AWS
// places (environment, shared credentials and config files, instance
// roles). The package holds no locks: an object store cannot tie a lock to
// a process, and the lease protocol that replaces that wraps this backend.
package s3
