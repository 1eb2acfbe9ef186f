// Copyright (c) 2024 Sumner Evans
//
// This Source Code Form is subject to the terms of the Mozilla Public
// License, v. 2.0. If a copy of the MPL was not distributed with this
// file, You can obtain one at http://mozilla.org/MPL/2.0/.

// Package verificationhelper provides a helper for the interactive
// verification process according to [Section 11.12.2] of the Spec.
//
// [Section 11.12.2]: https://spec.matrix.org/v1.9/client-server-api/#device-verification
package verificationhelper
