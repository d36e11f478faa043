// SPDX-License-Identifier: Apache-2.0

package redact

// IBAN checks for the iban rule and the mod97 validator: the length registered for the
// country, then the ISO 7064 MOD 97-10 check digits (ISO 13616-1).
//
// No Go library is used for this: the one IBAN module the Go module proxy serves here,
// github.com/almerlucke/go-iban (last change 2022-03), knows 73 countries, gives Costa Rica its
// pre-2015 length (21, now 22) and lacks Belarus, Egypt, Iraq, Libya, Sudan, El Salvador and the
// Vatican, all of which this table had before; the maintained ones (github.com/jacoelho/banking
// and others) are not served. The table below is the SWIFT IBAN Registry plus the national
// formats in use outside it, as the maintained JavaScript library ibantools 4.5.4 lists them
// (checked 2026-11-30: same 124 countries, same lengths). Update it from a newer registry
// release; TestIBANCountries holds one valid IBAN per country added since the first table.

// ibanLengths holds the IBAN length per country code.
var ibanLengths = map[string]int{
	// SWIFT IBAN Registry (ISO 13616), 89 countries.
	"AD": 24, "AE": 23, "AL": 28, "AT": 20, "AZ": 28, "BA": 20, "BE": 16, "BG": 22, "BH": 22,
	"BI": 27, "BR": 29, "BY": 28, "CH": 21, "CR": 22, "CY": 28, "CZ": 24, "DE": 22, "DJ": 27,
	"DK": 18, "DO": 28, "EE": 20, "EG": 29, "ES": 24, "FI": 18, "FK": 18, "FO": 18, "FR": 27,
	"GB": 22, "GE": 22, "GI": 23, "GL": 18, "GR": 27, "GT": 28, "HN": 28, "HR": 21, "HU": 28,
	"IE": 22, "IL": 23, "IQ": 23, "IS": 26, "IT": 27, "JO": 30, "KW": 30, "KZ": 20, "LB": 28,
	"LC": 32, "LI": 21, "LT": 20, "LU": 20, "LV": 21, "LY": 25, "MC": 27, "MD": 24, "ME": 22,
	"MK": 19, "MN": 20, "MR": 27, "MT": 31, "MU": 30, "NI": 28, "NL": 18, "NO": 15, "OM": 23,
	"PK": 24, "PL": 28, "PS": 29, "PT": 25, "QA": 29, "RO": 24, "RS": 22, "RU": 33, "SA": 24,
	"SC": 31, "SD": 18, "SE": 24, "SI": 19, "SK": 24, "SM": 27, "SO": 23, "ST": 25, "SV": 28,
	"TL": 23, "TN": 24, "TR": 26, "UA": 29, "VA": 22, "VG": 24, "XK": 20, "YE": 30,
	// In national use, not in the registry: the French overseas territories and the Åland
	// Islands with codes of their own (the registry files them under FR and FI), and the IBAN
	// formats of the BCEAO and BEAC zones, Algeria, Angola, Cape Verde, Comoros, Iran, Madagascar,
	// Morocco and Mozambique.
	"AO": 25, "AX": 18, "BF": 28, "BJ": 28, "BL": 27, "CF": 27, "CG": 27, "CI": 28, "CM": 27,
	"CV": 25, "DZ": 26, "GA": 27, "GF": 27, "GP": 27, "GQ": 27, "GW": 25, "IR": 26, "KM": 27,
	"MA": 28, "MF": 27, "MG": 27, "ML": 28, "MQ": 27, "MZ": 25, "NC": 27, "NE": 28, "PF": 27,
	"PM": 27, "RE": 27, "SN": 28, "TD": 27, "TF": 27, "TG": 28, "WF": 27, "YT": 27,
}

// ibanValid checks country length and the ISO 7064 mod-97-10 checksum; spaces are ignored,
// letters may be either case.
func ibanValid(s string) bool {
	b := make([]byte, 0, 34)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ':
		case c >= 'a' && c <= 'z':
			b = append(b, c-32)
		case c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
			b = append(b, c)
		default:
			return false
		}
	}
	if len(b) < 15 || len(b) > 34 {
		return false
	}
	if want, ok := ibanLengths[string(b[:2])]; !ok || want != len(b) {
		return false
	}
	rem := 0
	for i := 0; i < len(b); i++ {
		c := b[(i+4)%len(b)]
		if c >= 'A' {
			v := int(c-'A') + 10
			rem = (rem*100 + v) % 97
		} else {
			rem = (rem*10 + int(c-'0')) % 97
		}
	}
	return rem == 1
}
