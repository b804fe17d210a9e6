"""Enum and field tables of the .mnn FlatBuffer format (MNN 3.6.1 schema/default/*.fbs), as data."""
from __future__ import annotations


def _run(start: int, names: str) -> dict[int, str]:
    """Enum values that count up from ``start`` (FlatBuffers numbers unassigned names this way)."""
    return {start + i: name for i, name in enumerate(names.split())}


_OP_TYPES = {
    **_run(0, """AbsVal QuantizedAdd ArgMax AsString InstanceNorm BatchToSpaceND Copy BinaryOp Bnll Cast
        Concat Const Convolution ConvolutionDepthwise Crop CropAndResize ImageProcess Deconvolution
        DeconvolutionDepthwise Dequantize DetectionOutput Dropout Eltwise ELU Unique Exp ExpandDims Fill
        Flatten Im2Col Gather GatherV2 Im2Seq InnerProduct Input Interp Log LRN LSTM MatMul MoE
        NonMaxSuppression NonMaxSuppressionV2 Normalize Pack Padding Permute Pooling Power PReLU PriorBox
        Proposal QuantizedAvgPool QuantizedBiasAdd QuantizedConcat QuantizedDepthwiseConv2D
        QuantizedLogistic RasterAndInterpolate QuantizedMaxPool Texture RasterDiff QuantizedReshape
        QuantizedSoftmax QuantizeMaxMin QuantizeV2 Range Rank ReduceJoin Reduction ReLU ReLU6
        RequantizationRange Requantize Reshape Resize RNN ROIPooling Scale Selu Seq2Out Shape Sigmoid Size
        Slice SliceTf Softmax SpaceToBatchND SpatialProduct Col2Im Segment Squeeze StridedSlice CastLike
        StringSplit StringToNumber TanH TfQuantizedConv2D Threshold Tile TopKV2 Transpose UnaryOp Unpack
        Where Moments RNNSequenceGRU BatchMatMul Unsqueeze CosineSimilarity DepthToSpace SpaceToDepth
        ReverseSequence Pooling3D Convolution3D MatrixBandPart GatherND DetectionPostProcess UnravelIndex
        ScatterNd OneHot BroadcastTo Dilation2D Interp3D"""),
    **_run(128, """Raster ConvertTensor ArgMin LinSpace RandomUniform TensorArray TensorArraySize
        TensorArrayRead TensorArrayWrite TensorArrayGather TensorArrayScatter TensorArraySplit
        TensorArrayConcat LSTMBlockCell Reverse ROIAlign RandomNormal TensorArrayInsert TensorArrayErase
        EyeLike CumSum Det CumProd ScatterElements GatherElements Svd Histogram DynamicQuant Stft"""),
    **_run(256, """Plugin Select ZerosLike Broastcast SetDiff1D ReluGrad Identity PoolGrad SoftmaxGrad
        Conv2DBackPropFilter TrainableParam BatchNorm ConvTranspose3D ZeroGrad"""),
    # 307/308 and FusedLinearParam below come from the schema after 3.6.1: newer exports still open.
    **_run(299, "Attention FmhaV2 Fmhca SeqLen2Spatial SplitGeLU GroupNorm LinearAttention RoPE FusedLinear GatedRMSNorm"),
    **_run(512, "Extra ConvInt8 Int8ToFloat DepthwiseConvInt8"),
    **_run(517, "FloatToInt8 EltwiseInt8"),
    **_run(600, "While If"),
    **_run(603, "LayerNorm GridSample"),
}

# Union OpParameter: tag 0 is NONE, members count from 1.
_PARAM_TYPES = tuple("""NONE QuantizedAdd ArgMax AsString Axis BatchNorm BinaryOp Blob CastParam
    Convolution2D Crop CropAndResize Dequantize DetectionOutput Eltwise ExpandDims Fill Flatten Gather
    GatherV2 InnerProduct Input Interp LRN LSTM MatMul NonMaxSuppressionV2 Normalize PackParam Permute
    Plugin Pool PRelu PriorBox Proposal QuantizedAvgPool QuantizedBiasAdd QuantizedConcat QuantizedLogistic
    QuantizedMatMul QuantizedMaxPool QuantizedRelu QuantizedRelu6 QuantizedReshape QuantizedSoftmax
    QuantizeMaxMin QuantizeV2 Range Rank ReduceJoin ReductionParam Relu Relu6 RequantizationRange
    Requantize Reshape Resize RoiParameters Scale Selu Size Slice SliceTf SpaceBatch SqueezeParam
    StridedSliceParam TensorConvertInfo TfQuantizedConv2D TopKV2 Transpose UnaryOp MomentsParam RNNParam
    BatchMatMulParam QuantizedFloatParam DepthSpaceParam EltwiseInt8 ReverseSequenceParam Extra Pool3D
    Convolution3D ELU DetectionPostProcessParam OneHotParam PadParam WhileParam IfParam RandomUniform
    LayerNorm TensorArray LSTMBlockCell GridSample LoopParam ImageProcessParam CumSum GroupNorm
    FmhaV2Param FmhcaParam AttentionParam StftParam LinearAttentionParam ShapeParam RoPEParam
    FusedLinearParam""".split())

# DataType, written as numpy-style names (DT_FLOAT -> float32, DT_HALF -> float16).
_DATA_TYPES = tuple("""invalid float32 float64 int32 uint8 int16 int8 string complex64 int64 bool qint8
    quint8 qint32 bfloat16 qint16 quint16 uint16 complex128 float16 resource variant""".split())
_DATA_FORMATS = ("NCHW", "NHWC", "NC4HW4", "NHWC4", "UNKNOWN")
_NET_SOURCES = ("CAFFE", "TENSORFLOW", "TFLITE", "ONNX", "TORCH")
_PAD_MODE = ("CAFFE", "VALID", "SAME")
_POOL_TYPES = ("MAXPOOL", "AVEPOOL")
_AVG_COUNT = ("DEFAULT", "INCLUDE_PADDING", "EXCLUDE_PADDING")
_ELTWISE = ("PROD", "SUM", "MAXIMUM", "SUB")
_BINARY = {**_run(0, """ADD SUB MUL DIV MAX_TEMP MIN_TEMP POW REALDIV MINIMUM MAXIMUM GREATER GREATER_EQUAL
    LESS FLOORDIV SquaredDifference EQUAL LESS_EQUAL FLOORMOD"""),
    **_run(19, """MOD ATAN2 LOGICALOR NOTEQUAL BITWISE_AND BITWISE_OR BITWISE_XOR LOGICALXOR LEFTSHIFT
    RIGHTSHIFT MUL_SILU""")}
_UNARY = tuple("""ABS NEG FLOOR CEIL SQUARE SQRT RSQRT EXP LOG SIN COS TAN ASIN ACOS ATAN RECIPROCAL LOG1P
    BNLL ACOSH SINH ASINH ATANH SIGN ROUND COSH ERF ERFC ERFINV EXPM1 SIGMOID TANH HARDSWISH GELU
    GELU_STANDARD SILU""".split())
_REDUCTION = ("SUM", "ASUM", "SUMSQ", "MEAN", "MAXIMUM", "MINIMUM", "PROD", "ANY", "ALL")
_QUANTIZE_ALGO = ("DEFAULT", "OVERFLOW_AWARE", "WINOGRAD_AWARE")
_COORD_MODE = ("NotSet", "AlignCorners", "HalfPixels", "PytorchHalfPixels", "Asymmetric",
               "TensorflowHalfPixels", "TensorflowCropAndResize")
_PAD_VALUE_MODE = ("CONSTANT", "REFLECT", "SYMMETRIC", "EDGE")
# IDSTQuan.type, as the schema comment and MNN's ConvolutionCommon read it.
_IDST_KINDS = {1: "weight_quant", 2: "weight_quant_sparse", 3: "fp16", 4: "weight_int8"}

_I, _F, _B, _DT = "i32", "f32", "bool", "dtype"
# Parameter tables decoded field by field: (attribute key, field index, kind, default).
_SIMPLE_PARAMS = {
    "Axis": (("axis", 0, _I, 0),),
    "Input": (("dims", 0, "ints", None), ("dtype", 1, _DT, 1), ("dformat", 2, ("i8", _DATA_FORMATS), 2)),
    "Permute": (("dims", 0, "ints", None),),
    "Reshape": (("dims", 0, "ints", None), ("dimType", 1, ("i8", _DATA_FORMATS), 0)),
    "Eltwise": (("type", 0, ("i8", _ELTWISE), 0), ("coeff", 1, "floats", None)),
    "BinaryOp": (("opType", 0, ("i32", _BINARY), 0), ("T", 1, _DT, 1), ("activationType", 2, _I, 0)),
    "UnaryOp": (("opType", 0, ("i32", _UNARY), 0), ("T", 1, _DT, 0)),
    "LayerNorm": (("axis", 0, "ints", None), ("epsilon", 1, _F, 0.0), ("group", 4, _I, 1),
                  ("useRMSNorm", 6, _B, False)),
    "GroupNorm": (("axis", 0, _I, 0), ("epsilon", 1, _F, 0.0), ("group", 4, _I, 1), ("bSwish", 5, _I, 0)),
    "MatMul": (("T", 0, _DT, 0), ("transposeA", 1, _B, False), ("transposeB", 2, _B, False)),
    "BatchMatMulParam": (("adjX", 0, _B, False), ("adjY", 1, _B, False)),
    "Gather": (("Tindices", 0, _DT, 0), ("Tparams", 1, _DT, 0), ("validateIndices", 2, _B, False),
               ("axis", 3, _I, 0)),
    "GatherV2": (("Taxis", 0, _DT, 0), ("Tindices", 1, _DT, 0), ("Tparams", 2, _DT, 0)),
    "WhileParam": (("cond_graph", 0, "str", None), ("body_graph", 1, "str", None)),
    "IfParam": (("then_graph", 0, "str", None), ("else_graph", 1, "str", None)),
    "TensorConvertInfo": (("source", 0, ("i8", _DATA_FORMATS), 0), ("dest", 1, ("i8", _DATA_FORMATS), 0)),
    "CastParam": (("srcT", 0, _DT, 0), ("dstT", 1, _DT, 0)),
    "ReductionParam": (("operation", 0, ("i8", _REDUCTION), 0), ("dim", 1, "ints", None), ("coeff", 2, _F, 0.0),
                       ("keepDims", 3, _B, False), ("dType", 4, _DT, 1)),
    "SqueezeParam": (("squeezeDims", 0, "ints", None),),
    "PackParam": (("dataType", 0, _DT, 0), ("axis", 1, _I, 0)),
    "Flatten": (("axis", 0, _I, 0), ("endAxis", 1, _I, 0)),
    "Slice": (("axis", 0, _I, 0), ("slicePoints", 1, "ints", None)),
    "StridedSliceParam": (("Index", 0, _DT, 0), ("T", 1, _DT, 0), ("beginMask", 2, _I, 0), ("endMask", 3, _I, 0),
                          ("ellipsisMask", 4, _I, 0), ("newAxisMask", 5, _I, 0), ("shrinkAxisMask", 6, _I, 0),
                          ("fromType", 7, _I, 0)),
    "ExpandDims": (("T", 0, _DT, 0), ("Tdim", 1, _DT, 0), ("axis", 2, _I, 0)),
    "Relu": (("slope", 0, _F, 0.0),),
    "Relu6": (("minValue", 0, _F, 0.0), ("maxValue", 1, _F, 6.0)),
    "ELU": (("alpha", 0, _F, 0.0),),
    "Selu": (("scale", 0, _F, 0.0), ("alpha", 1, _F, 0.0)),
    "PRelu": (("slopeCount", 0, _I, 0),),
    "LRN": (("regionType", 0, _I, 0), ("localSize", 1, _I, 0), ("alpha", 2, _F, 0.0), ("beta", 3, _F, 0.0),
            ("bias", 4, _F, 1.0)),
    "ArgMax": (("outMaxVal", 0, _I, 0), ("topK", 1, _I, 0), ("axis", 2, _I, 0)),
    "Interp": (("widthScale", 0, _F, 0.0), ("heightScale", 1, _F, 0.0), ("outputWidth", 2, _I, 0),
               ("outputHeight", 3, _I, 0), ("resizeType", 4, _I, 0), ("alignCorners", 5, _B, False),
               ("halfPixelCenters", 6, _B, False), ("ctm", 10, ("i8", _COORD_MODE), 0)),
    "Resize": (("xScale", 0, _F, 0.0), ("yScale", 1, _F, 0.0)),
    "TopKV2": (("T", 0, _DT, 1), ("sorted", 1, _B, False), ("largest", 2, _B, True)),
    "OneHotParam": (("dType", 0, _DT, 1), ("axis", 1, _I, -1)),
    "PadParam": (("mode", 0, ("i8", _PAD_VALUE_MODE), 0),),
    "DepthSpaceParam": (("blockSize", 0, _I, 0), ("mode", 1, ("i8", ("DCR", "CRD")), 0)),
    "CumSum": (("exclusive", 0, _B, False), ("reverse", 1, _B, False)),
    "GridSample": (("mode", 0, ("i8", ("BILINEAR", "NEAREST")), 0),
                   ("paddingMode", 1, ("i8", ("ZEROS", "CLAMP", "REFLECTION", "CUBE")), 0),
                   ("alignCorners", 2, _B, False)),
    "BatchNorm": (("channels", 0, _I, 0), ("epsilon", 7, _F, 0.001)),
    "Scale": (("channels", 0, _I, 0),),
    "InnerProduct": (("outputCount", 0, _I, 0), ("biasTerm", 1, _I, 0), ("axis", 5, _I, 0),
                     ("transpose", 6, _B, False)),
    "Normalize": (("acrossSpatial", 0, _I, 0), ("channelShared", 1, _I, 0), ("eps", 2, _F, 0.0)),
    "Pool3D": (("strides", 0, "ints", None), ("kernels", 1, "ints", None), ("pads", 2, "ints", None),
               ("type", 3, ("i8", _POOL_TYPES), 0), ("padType", 4, ("i8", _PAD_MODE), 0), ("global", 5, _B, False)),
    "MomentsParam": (("dim", 0, "ints", None), ("keepDims", 1, _B, True), ("dType", 2, _DT, 1)),
    "LSTM": (("outputCount", 0, _I, 0), ("weightSize", 1, _I, 0), ("clippingThreshold", 2, _F, 0.0)),
    "RNNParam": (("numUnits", 0, _I, 0), ("isBidirectionalRNN", 1, _B, False), ("linearBeforeReset", 2, _B, False),
                 ("keepAllOutputs", 3, _B, False)),
    "AttentionParam": (("kv_cache", 0, _B, True), ("layer_index", 2, _I, -1)),
    "RoiParameters": (("pooledWidth", 0, _I, 0), ("pooledHeight", 1, _I, 0), ("spatialScale", 2, _F, 0.0),
                      ("samplingRatio", 3, _I, -1), ("aligned", 4, _B, False), ("poolType", 5, ("i8", _POOL_TYPES), 1)),
}
_CONV3D_COMMON = (("dilates", 0, "ints", None), ("strides", 1, "ints", None), ("kernels", 2, "ints", None),
                  ("pads", 3, "ints", None), ("padMode", 4, ("i8", _PAD_MODE), 0), ("inputCount", 5, _I, 0),
                  ("outputCount", 6, _I, 0), ("relu", 7, _B, False), ("relu6", 8, _B, False), ("group", 9, _I, 1))

# Parameters whose weights are [float] vectors: ((name, field index), ...), index of `external`.
_FLOAT_WEIGHTS = {
    "LayerNorm": ((("gamma", 2), ("beta", 3)), 5),
    "GroupNorm": ((("gamma", 2), ("beta", 3)), 6),
    "MatMul": ((("weight", 3), ("bias", 4)), None),
    "InnerProduct": ((("weight", 3), ("bias", 4)), None),
    "Scale": ((("scale", 1), ("bias", 2)), 3),
    "BatchNorm": ((("slope", 1), ("mean", 2), ("var", 3), ("bias", 4), ("a", 5), ("b", 6)), None),
    "PRelu": ((("slope", 1),), None),
    "Normalize": ((("scale", 3),), None),
    "Convolution3D": ((("weight", 1), ("bias", 2)), 3),
}
# Parameters whose weights are Blob tables: (name, field index).
_BLOB_WEIGHTS = {
    "LSTM": (("weightI", 3), ("weightH", 4), ("bias", 5), ("weightIQ", 6), ("weightIA", 7)),
    "RNNParam": tuple((name, 4 + i) for i, name in enumerate(
        "fwGateWeight fwGateBias fwCandidateWeight fwCandidateBias fwRecurrentBias "
        "bwGateWeight bwGateBias bwCandidateWeight bwCandidateBias bwRecurrentBias".split())),
}
# Blob data vectors: (field index, bytes per item): uint8s int8s int32s int64s float32s strings.
_BLOB_VECTORS = ((3, 1), (4, 1), (5, 4), (6, 8), (7, 4), (8, 4))
