// SPDX-License-Identifier: Apache-2.0

package seal

// Keeper drivers linked into the binaries for keeper_url, besides base64key:// (localsecrets),
// with each cloud's default credentials: AWS KMS (awskms://KEY_ID?region=R), Google Cloud KMS
// (gcpkms://projects/P/locations/L/keyRings/R/cryptoKeys/K), Azure Key Vault
// (azurekeyvault://VAULT.vault.azure.net/keys/KEY) and HashiCorp Vault's transit engine
// (hashivault://KEY, with VAULT_SERVER_URL and VAULT_SERVER_TOKEN).
import (
	_ "gocloud.dev/secrets/awskms"
	_ "gocloud.dev/secrets/azurekeyvault"
	_ "gocloud.dev/secrets/gcpkms"
	_ "gocloud.dev/secrets/hashivault"
)
