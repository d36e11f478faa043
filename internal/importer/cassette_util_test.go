// SPDX-License-Identifier: Apache-2.0

package importer

import "encoding/base64"

func b64encode(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
