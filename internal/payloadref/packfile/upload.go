// SPDX-License-Identifier: Apache-2.0

package packfile

import (
	"context"
	"fmt"
	"io"
	"os"

	"gocloud.dev/blob"
)

// WriteFile writes the pack file at path (a whole v2 pack: its footer is checked first) at key,
// streamed, with one request where the driver allows (see Write). os.ErrNotExist (wrapped)
// when there is no such file or it is not a whole pack.
func WriteFile(ctx context.Context, b *blob.Bucket, key, path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer func() { _ = f.Close() }()
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	var ft [FooterSize]byte
	if st.Size() < FooterSize {
		return 0, fmt.Errorf("%s: %w", path, os.ErrNotExist)
	}
	if _, err := f.ReadAt(ft[:], st.Size()-FooterSize); err != nil {
		return 0, err
	}
	if _, _, _, v, err := DecodeFooter(ft[:], st.Size()); err != nil || v != 2 {
		return 0, fmt.Errorf("%s: not a whole pack: %w", path, os.ErrNotExist)
	}
	bw, err := b.NewWriter(ctx, key, &blob.WriterOptions{ContentType: packContentType, BufferSize: bufferFor(st.Size())})
	if err != nil {
		return 0, err
	}
	if _, err := io.Copy(bw, f); err != nil {
		_ = bw.Close()
		return 0, err
	}
	return st.Size(), bw.Close()
}

const packContentType = "application/vnd.runagain.pack"

// bufferFor is the writer buffer for a pack of n bytes: the whole pack (see Write).
func bufferFor(n int64) int { return int(max(n+1, 5<<20)) }

// Write writes a whole pack at key with one request where the driver allows: the buffer
// covers the whole pack, so gocloud's s3blob (the AWS transfer manager) sends one PutObject for a
// pack below its 16 MiB multipart threshold, and a single part above it.
func Write(ctx context.Context, b *blob.Bucket, key string, data []byte) error {
	return b.WriteAll(ctx, key, data, &blob.WriterOptions{ContentType: packContentType, BufferSize: bufferFor(int64(len(data)))})
}
