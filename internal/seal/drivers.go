package seal

// Keeper drivers linked into the binaries for keeper_url, besides base64key:// (localsecrets):
// AWS KMS (awskms://KEY_ID?region=...) and Google Cloud KMS
// (gcpkms://projects/P/locations/L/keyRings/R/cryptoKeys/K), with the clouds' default credentials.
import (
	_ "gocloud.dev/secrets/awskms"
	_ "gocloud.dev/secrets/gcpkms"
)
