// SPDX-License-Identifier: Apache-2.0

package coldstore

import "bytes"

func bytesReaderAt(b []byte) *bytes.Reader { return bytes.NewReader(b) }
